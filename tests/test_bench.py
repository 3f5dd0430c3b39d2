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
