"""The benchmarks stay runnable: every module of bench/ imports (a rename in pipeline/ or
bench/common breaks none silently), the shared helpers do what the scripts rely on, and a
script runs as a module from the repository root."""
from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import bench
from bench import common
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey

REPO = Path(__file__).resolve().parents[1]
MODULES = sorted(m.name for m in pkgutil.iter_modules(bench.__path__))
PACKAGES = {m.name for m in pkgutil.iter_modules(bench.__path__) if m.ispkg}


@pytest.mark.parametrize("name", MODULES)
def test_every_bench_module_imports_and_has_a_main(name):
    module = importlib.import_module(f"bench.{name}")
    if name in PACKAGES:  # a package runs through its __main__
        assert importlib.util.find_spec(f"bench.{name}.__main__") is not None, f"bench.{name} has no __main__"
    elif name != "common":
        assert callable(getattr(module, "main", None)), f"bench.{name} has no main()"
    if name != "common":
        assert f"python3 -m bench.{name}" in (module.__doc__ or ""), f"bench.{name}'s usage line is not the module form"


def test_no_bench_script_patches_sys_path():
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "bench").rglob("*.py") if "sys.path.insert" in p.read_text()]
    assert offenders == []


def test_markdown_table_and_write_result(tmp_path, capsys):
    table = common.markdown_table(["a", "b"], [[1, "x"], [2.5, "y"]])
    assert table.splitlines() == ["| a | b |", "|---|---|", "| 1 | x |", "| 2.5 | y |"]
    out = tmp_path / "deeper" / "t.md"
    common.write_result(out, "# T\n\n" + table + "\n", show=table)
    assert out.read_text() == "# T\n\n" + table + "\n"
    assert capsys.readouterr().out == table + "\n"
    common.write_result(None, "only printed")
    assert capsys.readouterr().out == "only printed\n"


def test_argument_helpers():
    parser = common.arg_parser("doc")
    common.add_log_sizes(parser, [10, 14])
    common.add_curves(parser)
    assert parser.parse_args([]).log_sizes == [10, 14]
    args = parser.parse_args(["18", "20", "--curves", "bls12-381"])
    assert (args.log_sizes, args.curves) == ([18, 20], ["bls12-381"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--curves", "secp256k1"])
    assert common.int_list("1,2,5") == [1, 2, 5]


def test_fixture_dirs_follow_the_curve_order():
    dirs = common.fixture_dirs([], "chain_2e*")
    assert [d.parent.name for d in dirs] == ["bn128"] * 2 + ["bls12381"] * 2
    assert [d.name for d in dirs[:2]] == ["chain_2e10", "chain_2e8"]
    assert common.fixture_dirs(["x/y"], "ignored") == [Path("x/y")]


def test_random_circuit_runs_as_a_module(tmp_path):
    """The module form from the repository root, as bench/device.sh calls it; the key it
    writes reads back with the sizes asked for."""
    done = subprocess.run([sys.executable, "-m", "bench.random_circuit", "bn128", "5", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    zkey = read_zkey(tmp_path / "circuit_final.zkey")
    assert zkey.domain_size == 32 and zkey.n_vars == 30
    assert read_wtns(tmp_path / "witness.wtns").values.shape[0] == 30


def test_seed_scale_runs_on_the_cpu_backend_as_a_module(tmp_path):
    """The seed-scale stream end to end at 2^8 (random key, 10 partitions): the table has the
    stream's row, a row per partition, sppark marked not run, and the timeline's data."""
    out = tmp_path / "seed.md"
    done = subprocess.run([sys.executable, "-m", "bench.seed_scale", "--backend", "cpu", "--curve", "bn128",
                           "--key", "random", "--witness", "bits95", "--sizes", "8", "--partitions", "10", "--jobs", "1",
                           "--warmup", "0", "--out", str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "| 2^8 | 248 |" in text and "| 1 x 10 |" in text
    assert "not run (CPU backend)" in text
    partition_rows = [line for line in text.splitlines() if line.split("|")[1:2] in ([f" {i} "] for i in range(10))]
    assert len(partition_rows) == 10
    assert (tmp_path / "seed_2e8.timeline.json").exists()


def test_seed_scale_proofs_from_a_development_key_verify(tmp_path):
    """The --key dev path on the CPU backend (setup/cpu.py, the key registered from memory): its
    proofs verify and a changed public input is rejected."""
    out = tmp_path / "seed.md"
    done = subprocess.run([sys.executable, "-m", "bench.seed_scale", "--backend", "cpu", "--curve", "bn128",
                           "--sizes", "10", "--partitions", "2", "--jobs", "1", "--warmup", "0", "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    row = next(line for line in out.read_text().splitlines() if line.startswith("| 2^10 | 1016 |"))
    assert row.endswith("| yes / yes |"), row


SPPARK_OUTPUT = """sizeof affine 96 affine2 192 scalar 32
sppark NTT Fr (NR) bls12-381 2^16: median 0.100 ms (min 0.090)
sppark NTT Fr (NR) bls12-381 2^20: median 1.000 ms (min 0.900)
setup G1 2^20: 120 ms
check G1 2^10 vs host double-and-add: code 0 equal 1
sppark G1 MSM bls12-381 2^20: median 20.000 ms (min 19.000)
sppark G1 MSM 80%{0,1} bls12-381 2^20: median 8.000 ms (min 7.500)
sppark G2 MSM bls12-381 2^20: median 50.000 ms (min 49.000)
sppark G2 MSM 80%{0,1} bls12-381 2^20: median 20.000 ms (min 19.000)
"""


def test_sppark_stage_reads_the_harness_and_sums_a_groth16_stage(tmp_path):
    from bench import sppark_stage

    stage = sppark_stage.parse(SPPARK_OUTPUT, 20)
    assert (stage.g1_ms, stage.g1_bits_ms, stage.g2_ms, stage.g2_bits_ms, stage.ntt_ms) == (20, 8, 50, 20, 1)
    assert stage.stage_ms(bit_heavy=False) == 4 * 20 + 50 + 6 * 1
    assert stage.stage_ms(bit_heavy=True) == 3 * 8 + 20 + 20 + 6 * 1  # H's scalars stay full-width
    with pytest.raises(ValueError, match="no G1 MSM, G1 MSM 80%"):
        sppark_stage.parse(SPPARK_OUTPUT, 22)
    fake = tmp_path / "bench_bls12381"  # stands for the harness: prints its rows, checks its arguments
    fake.write_text(f"#!/bin/sh\n[ \"$*\" = '20 20 20 20' ] || exit 3\ncat <<'X'\n{SPPARK_OUTPUT}X\n")
    fake.chmod(0o755)
    assert sppark_stage.measure("bls12381", [20], tmp_path, 30) == {20: stage}
    failed = sppark_stage.measure("bls12381", [22], tmp_path, 30)[22]
    assert failed.startswith("not run (RuntimeError: bench_bls12381 22 exited with 3")
    assert sppark_stage.measure("bn128", [20], tmp_path, 30)[20].startswith("not run (no ")
