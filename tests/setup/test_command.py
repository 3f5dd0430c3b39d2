"""zkpipe setup --dev: writes a key and its vk with the warning; refuses without --dev and on bad input."""
from __future__ import annotations

import json

from pipeline.cli import EXIT_BAD_INPUT, EXIT_OK, main
from pipeline.formats.snarkjs_json import verification_key_to_json
from pipeline.formats.zkey import read_zkey
from pipeline.setup import DEV_WARNING
from tests.conftest import fixture_dir
from tests.setup.conftest import dev_key


def test_dev_setup_writes_the_key_and_vk_and_warns(tmp_path, capsys):
    r1cs = fixture_dir("bn128", "multiplier") / "circuit.r1cs"
    out, vk = tmp_path / "dev.zkey", tmp_path / "vk.json"
    assert main(["setup", "--dev", str(r1cs), "--out", str(out), "--vk", str(vk), "--backend", "cpu",
                 "--seed", "1"]) == EXIT_OK
    assert DEV_WARNING in capsys.readouterr().err
    zkey = read_zkey(out)
    _, _, same_seed = dev_key("bn128", "multiplier", seed=1)
    assert (zkey.points_a == same_seed.points_a).all() and zkey.ic == same_seed.ic
    assert json.loads(vk.read_text()) == verification_key_to_json(zkey.verification_key())


def test_without_dev_nothing_is_written(tmp_path, capsys):
    r1cs = fixture_dir("bn128", "multiplier") / "circuit.r1cs"
    assert main(["setup", str(r1cs), "--out", str(tmp_path / "k.zkey")]) == EXIT_BAD_INPUT
    assert "--dev" in capsys.readouterr().err and not (tmp_path / "k.zkey").exists()


def test_a_file_that_is_no_r1cs_exits_2_naming_it(tmp_path, capsys):
    wtns = fixture_dir("bn128", "multiplier") / "witness.wtns"
    assert main(["setup", "--dev", str(wtns), "--out", str(tmp_path / "k.zkey"), "--backend", "cpu"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "witness.wtns" in err and "Traceback" not in err
