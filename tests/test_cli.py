"""The zkpipe command: each subcommand's happy path and its exit codes on bad input."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli import EXIT_BAD_INPUT, EXIT_INVALID, EXIT_OK, main
from tests.conftest import fixture_dir, snarkjs_verify


def test_prove_then_verify_with_ours_and_snarkjs(tmp_path, capsys):
    folder = fixture_dir("bls12381", "bits")
    proof, public = tmp_path / "proof.json", tmp_path / "public.json"
    assert main(["prove", str(folder / "circuit_final.zkey"), str(folder / "witness.wtns"),
                 "--proof", str(proof), "--public", str(public), "--backend", "cpu"]) == EXIT_OK
    assert json.loads(public.read_text()) == json.loads((folder / "public.json").read_text())
    assert main(["verify", str(folder / "vk.json"), str(public), str(proof)]) == EXIT_OK
    assert "valid" in capsys.readouterr().out
    assert snarkjs_verify(folder / "vk.json", public, proof)


def test_verify_exits_1_on_a_tampered_proof(capsys):
    folder = fixture_dir("bn128", "chain_2e8")
    assert main(["verify", str(folder / "vk.json"), str(folder / "public.json"),
                 str(folder / "proof_bad.json")]) == EXIT_INVALID
    assert "INVALID" in capsys.readouterr().out


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_export_vk_matches_snarkjs_fields(tmp_path, curve_name):
    folder = fixture_dir(curve_name, "poseidon2")
    out = tmp_path / "vk.json"
    assert main(["export-vk", str(folder / "circuit_final.zkey"), str(out)]) == EXIT_OK
    ours, theirs = json.loads(out.read_text()), json.loads((folder / "vk.json").read_text())
    for field in ("protocol", "curve", "nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2", "vk_delta_2", "IC"):
        assert ours[field] == theirs[field], field


def test_inspect_names_curve_and_sizes(capsys):
    folder = fixture_dir("bn128", "chain_2e8")
    assert main(["inspect", str(folder / "circuit_final.zkey")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "bn128" in out and "244" in out


def test_truncated_key_exits_2_naming_the_file(tmp_path, capsys):
    folder = fixture_dir("bn128", "chain_2e8")
    cut = tmp_path / "cut.zkey"
    cut.write_bytes((folder / "circuit_final.zkey").read_bytes()[:5000])
    assert main(["prove", str(cut), str(folder / "witness.wtns"), "--backend", "cpu"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "cut.zkey" in err and "Traceback" not in err


def test_witness_of_other_curve_exits_2(tmp_path, capsys):
    key = fixture_dir("bn128", "multiplier") / "circuit_final.zkey"
    wtns = fixture_dir("bls12381", "multiplier") / "witness.wtns"
    assert main(["prove", str(key), str(wtns), "--proof", str(tmp_path / "p.json"),
                 "--public", str(tmp_path / "q.json"), "--backend", "cpu"]) == EXIT_BAD_INPUT
    assert "bls12381" in capsys.readouterr().err


def test_witness_given_as_key_exits_2(capsys):
    wtns = fixture_dir("bn128", "multiplier") / "witness.wtns"
    assert main(["prove", str(wtns), str(wtns), "--backend", "cpu"]) == EXIT_BAD_INPUT
    assert "witness.wtns" in capsys.readouterr().err


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "nope.json"), str(tmp_path / "a"), str(tmp_path / "b")]) == EXIT_BAD_INPUT
    assert "nope.json" in capsys.readouterr().err


def test_demo_proves_and_verifies_the_bundled_example(capsys):
    assert main(["demo", "--curve", "bn128", "--backend", "cpu"]) == EXIT_OK
    assert "VALID" in capsys.readouterr().out


def test_console_script_runs_and_reports_bad_input_with_exit_2(tmp_path):
    script = shutil.which("zkpipe") or str(Path(sys.executable).parent / "zkpipe")
    assert Path(script).exists(), "pip install -e . should install the zkpipe command"
    bogus = tmp_path / "bogus.zkey"
    bogus.write_bytes(b"not a zkey at all")
    out = subprocess.run([script, "inspect", str(bogus)], capture_output=True, text=True, timeout=60)
    assert out.returncode == EXIT_BAD_INPUT
    assert "bogus.zkey" in out.stderr and "Traceback" not in out.stderr


def test_version_names_the_package_version(capsys):
    from pipeline import __version__

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith(f"zkpipe {__version__} ")


def _subcommands():
    from pipeline.cli import build_parser

    parser = build_parser()
    table = next(a for a in parser._actions if a.dest == "command")
    return parser, table.choices


def test_every_argument_of_every_command_has_help_text():
    parser, commands = _subcommands()
    assert {"prove", "verify", "export-vk", "inspect", "demo", "serve", "submit"} <= set(commands)
    for name, sub in commands.items():
        for action in sub._actions:
            assert action.help, f"zkpipe {name} {action.option_strings or action.dest}: no help text"


def test_help_shows_defaults_and_no_raw_rst():
    parser, commands = _subcommands()
    texts = {name: " ".join(sub.format_help().split()) for name, sub in commands.items()}
    assert not any("``" in text for text in [parser.format_help(), *texts.values()])
    assert "--backend {cpu,cuda,auto} cpu, cuda, or auto" in texts["demo"] and "(default: auto)" in texts["demo"]
    assert "(default: http://127.0.0.1:9820)" in texts["submit"] and "(default: 9820" in texts["serve"]


@pytest.mark.parametrize("columns", ["", "120", "40", "0", "wide"])
def test_help_is_as_wide_as_shutil_says_without_importing_it(monkeypatch, columns):
    """cli_parser.HelpFormatter measures the terminal itself (shutil is ~2 ms of every command's start)."""
    from pipeline.server.cli_parser import terminal_columns

    monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


def _gpu_answers() -> bool:
    from tests.backends.test_choice import gpu_answers

    return gpu_answers()


def test_demo_says_which_backend_auto_chose_and_why(capsys):
    assert main(["demo", "--curve", "bn128", "--backend", "auto"]) == EXIT_OK
    out = capsys.readouterr().out
    expected = "backend cuda (auto: a GPU answered" if _gpu_answers() else "backend cpu (auto: CUDA unavailable: "
    assert expected in out


def test_cuda_backend_without_a_gpu_exits_2_in_one_line():
    if _gpu_answers():
        pytest.skip("a GPU answers here: --backend cuda works")
    out = subprocess.run([sys.executable, "-m", "pipeline", "demo", "--curve", "bn128", "--backend", "cuda"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == EXIT_BAD_INPUT
    assert out.stderr.startswith("zkpipe: error: the CUDA backend cannot start: ") and out.stderr.count("\n") == 1


@pytest.mark.parametrize("given", [None, "4"])
def test_the_command_runs_openblas_on_one_thread_unless_the_caller_chose(given):
    """numpy's OpenBLAS would start a thread per core at import (no command does float linear algebra):
    the CLI module sets OPENBLAS_NUM_THREADS=1 before anything imports numpy, and keeps a caller's value."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given:
        env["OPENBLAS_NUM_THREADS"] = given
    code = "import os, pipeline.cli, numpy; print(os.environ['OPENBLAS_NUM_THREADS'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (given or "1")
