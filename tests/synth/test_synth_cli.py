"""zkpipe synth-circuit: writes files that read back and satisfy each other; refuses bad
parameters, a full disk and too little memory with exit 2 and a message, writing nothing."""
from __future__ import annotations

import json
from collections import namedtuple

import pytest

from pipeline.cli import main
from pipeline.formats.r1cs import read_r1cs
from pipeline.formats.wtns import read_wtns
from pipeline.groth16.r1cs_check import r1cs_is_satisfied
from pipeline.synth import cli_command


def test_writes_circuit_witness_and_shape(tmp_path, capsys):
    out = tmp_path / "c10"
    code = main(["synth-circuit", "--log-constraints", "10", "--public", "2", "--curve", "bn128", "--bits", "0.9",
                 "--mul-terms", "4", "--seed", "3", "--check", "--out", str(out)])
    assert code == 0
    r1cs, witness = read_r1cs(out / "circuit.r1cs"), read_wtns(out / "witness.wtns")
    assert r1cs.curve.name == "bn128" and r1cs.n_pub_in == 2 and len(r1cs.constraints) == 1024 - 3
    assert r1cs_is_satisfied(r1cs, witness) is None
    summary = json.loads((out / "synth.json").read_text())
    assert summary["shape"]["bit_fraction"] == 0.9 and summary["shape"]["mul_terms"] == 4
    assert summary["measured"]["bit_fraction"] == pytest.approx(0.9, abs=0.01)
    assert summary["measured"]["domain"] == 1024 and "check_s" in summary["timings"]
    assert "wrote" in capsys.readouterr().err


@pytest.mark.parametrize("flags,message", [
    (["--log-constraints", "30"], "log_constraints must be an integer in [10, 28], got 30"),
    (["--log-constraints", "10", "--bits", "2"], "bit_fraction must lie in [0, 1], got 2.0"),
    (["--log-constraints", "10", "--public", "-3"], "n_public must lie in [0, 256]"),
    (["--log-constraints", "10", "--curve", "bn128", "--pack-bits", "254"], "pack_bits must lie in [1, 253]"),
])
def test_bad_parameters_exit_2_with_the_reason(tmp_path, capsys, flags, message):
    assert main(["synth-circuit", *flags, "--out", str(tmp_path / "x")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_full_disk_is_refused_before_generating(tmp_path, capsys, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(cli_command.shutil, "disk_usage", lambda path: usage(1 << 30, 1 << 30, 1 << 20))
    assert main(["synth-circuit", "--log-constraints", "16", "--out", str(tmp_path / "big")]) == 2
    err = capsys.readouterr().err
    assert "has 0.00 GiB free, the files need" in err and "circuit.r1cs" in err and "in memory" in err
    assert not (tmp_path / "big").exists()


def test_too_little_memory_is_refused_before_generating(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli_command, "available_memory_bytes", lambda: 1 << 10)
    assert main(["synth-circuit", "--log-constraints", "12", "--out", str(tmp_path / "m")]) == 2
    assert "GiB of memory, 0.0 GiB is available" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
