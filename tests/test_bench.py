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


def test_oneshot_prove_says_what_a_new_interpreter_runs_before_zkpipe(tmp_path, monkeypatch):
    """The rows that tell where a one-shot process's first milliseconds go: the .pth files site
    runs (with their import lines), the slowest imports of an interpreter that runs nothing, and
    the floors with -I and -S beside the plain start."""
    import site

    from bench import oneshot_prove

    (tmp_path / "__editable__.demo.pth").write_text("import demo_finder; demo_finder.install()\n")
    (tmp_path / "paths.pth").write_text("/some/folder\n")
    monkeypatch.setattr(site, "getsitepackages", lambda: [str(tmp_path)])
    monkeypatch.setattr(site, "getusersitepackages", lambda: str(tmp_path / "absent"))
    assert oneshot_prove.site_pth_files() == [f"{tmp_path / '__editable__.demo.pth'}: import demo_finder; "
                                              "demo_finder.install()", f"{tmp_path / 'paths.pth'}: paths only"]
    rows = [line.split() for line in oneshot_prove.interpreter_imports().splitlines()]
    assert rows and all(float(cumulative) >= float(own) for cumulative, own, _ in rows)
    assert {"python3 -c pass", "python3 -I -c pass (isolated: no environment, no user site)",
            "python3 -S -c pass (no site: no .pth files run)"} <= set(oneshot_prove.FLOORS)


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
    spread = {line.split("|")[1].strip(): line for line in text.splitlines() if line.split("|")[1:2] in
              ([" all "], [" min "], [" max "])}
    assert set(spread) == {"all", "min", "max"}
    header = next(line for line in text.splitlines() if line.startswith("| partition |")).split("|")
    assert " prep: staging " in header and " prep: scan " in header  # where a partition's prep went
    column = header.index(" gpu ")
    gpu = {name: float(line.split("|")[column]) for name, line in spread.items()}
    assert gpu["min"] <= gpu["all"] <= gpu["max"]
    assert (tmp_path / "seed_2e8.timeline.json").exists()


def test_seed_scale_refuses_device_points_only_without_the_gpu_setup():
    done = subprocess.run([sys.executable, "-m", "bench.seed_scale", "--backend", "cpu", "--device-points-only"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--device-points-only needs the GPU development setup" in done.stderr


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


HARNESS_BN254 = """sizeof affine 64 affine2 128 scalar 32
sppark NTT Fr (NR) bn254 2^16: median 0.081 ms (min 0.079)
sppark NTT Fr (NR) bn254 2^20: median 0.402 ms (min 0.398)
sppark NTT Fr (NR) bn254 2^21: median 0.790 ms (min 0.781)
setup G1 2^22: 310 ms
check G1 2^10 vs host double-and-add: code 0 equal 1
sppark G1 MSM bn254 2^20: median 12.500 ms (min 12.100)
sppark G1 MSM 80%{0,1} bn254 2^20: median 6.250 ms (min 6.000)
sppark G1 MSM bn254 2^22: median 31.000 ms (min 30.500)
sppark G1 MSM 80%{0,1} bn254 2^22: median 15.000 ms (min 14.800)
setup G2 2^20: 95 ms
check G2 2^10 vs host double-and-add: code 0 equal 0
sppark G2 MSM bn254 2^20: median 40.000 ms (min 39.000)
sppark G2 MSM 80%{0,1} bn254 2^20: median 20.000 ms (min 19.500)
"""


def _vs_sppark_rows(kvs):
    """A small result set as bench.kernels_vs_sppark builds it: bn128 against the harness output
    above, bls12381 without a harness."""
    sppark = kvs.parse_harness(HARNESS_BN254)
    missing = "not run (no .anchors/bench_bls12381)"
    rows = []
    for curve, spp in (("bn128", sppark), ("bls12381", missing)):
        for log_n, ms in ((20, 9.0), (22, 30.0)):
            for kind, against, factor in (("random", "G1 MSM", 1), ("80% {0,1}", "G1 MSM 80%{0,1}", 0.5),
                                          ("80% {0,1}, 0/1 split", "G1 MSM 80%{0,1}", 0.4)):
                rows.append(kvs.Row(curve, "G1 MSM", log_n, kind, ms * factor, against,
                                    kvs.sppark_ms(spp, against, log_n)))
        rows.append(kvs.Row(curve, "G2 MSM", 20, "random", 36.0, "G2 MSM", kvs.sppark_ms(spp, "G2 MSM", 20)))
        for log_n, ms in ((20, 0.48), (21, 0.97)):
            ntt = kvs.sppark_ms(spp, kvs.SPPARK_NTT, log_n)
            rows += [kvs.Row(curve, "NTT", log_n, kvs.NATURAL, ms, kvs.SPPARK_NTT, ntt),
                     kvs.Row(curve, "NTT", log_n, kvs.RADIX_ONLY, 0.85 * ms, kvs.SPPARK_NTT, ntt),
                     kvs.Row(curve, "H", log_n, kvs.QUOTIENT, 3.5 * ms, "7 x NTT Fr (NR)",
                             kvs.sppark_ms(spp, kvs.SPPARK_NTT, log_n, times=7))]
    return rows


def test_kernels_vs_sppark_reads_every_harness_row_by_name_and_size():
    from bench import kernels_vs_sppark as kvs

    sppark = kvs.parse_harness(HARNESS_BN254)
    assert len(sppark) == 9  # the setup, check and sizeof lines are not rows
    assert sppark[("NTT Fr (NR)", 21)] == 0.79 and sppark[("G1 MSM 80%{0,1}", 22)] == 15.0
    assert sppark[("G2 MSM", 20)] == 40.0
    assert kvs.sppark_ms(sppark, "NTT Fr (NR)", 20, times=7) == pytest.approx(7 * 0.402)
    assert kvs.sppark_ms(sppark, "G2 MSM", 22) == "not run (no G2 MSM row at 2^22)"
    assert kvs.sppark_ms("not run (no x)", "G2 MSM", 20) == "not run (no x)"
    # one call per curve: G1 20..26 and G2 20..24 at even sizes, NTTs up to 2^27; a group left out is skipped
    assert kvs.harness_args([20, 22, 24, 26], [20, 22, 24], 27) == [20, 26, 27, 24]
    assert kvs.harness_args([], [22], 24) == [22, 21, 24, 22]


def test_kernels_vs_sppark_runs_the_harness_once_per_curve_or_says_why_not(tmp_path):
    from bench import kernels_vs_sppark as kvs

    fake = tmp_path / "bench_bn254"  # stands for the harness: prints its rows, checks its arguments
    fake.write_text(f"#!/bin/sh\n[ \"$*\" = '20 22 21 20' ] || {{ echo bad arguments >&2; exit 3; }}\n"
                    f"cat <<'X'\n{HARNESS_BN254}X\n")
    fake.chmod(0o755)
    assert kvs.run_sppark("bn128", tmp_path, [20, 22, 21, 20], 30) == kvs.parse_harness(HARNESS_BN254)
    failed = kvs.run_sppark("bn128", tmp_path, [20, 26, 27, 24], 30)
    assert failed == "not run (bench_bn254 exited with 3: bad arguments)"
    assert kvs.run_sppark("bls12381", tmp_path, [20], 30) == f"not run (no {tmp_path / 'bench_bls12381'})"


def test_kernels_vs_sppark_ratios_and_goals():
    from bench import kernels_vs_sppark as kvs

    g1 = kvs.Row("bn128", "G1 MSM", 20, "random", 9.0, "G1 MSM", 12.5)
    assert g1.ratio == pytest.approx(0.72) and g1.goal_met
    assert g1.cells() == ["bn128", "G1 MSM", "2^20", "random", "9.000", "G1 MSM", "12.50", "0.72", "<= 0.8: met"]
    slow = kvs.Row("bn128", "G2 MSM", 20, "random", 36.0, "G2 MSM", 40.0)
    assert slow.cells()[-2:] == ["0.90", "<= 0.8: not met"]
    h = kvs.Row("bn128", "H", 20, kvs.QUOTIENT, 2.5, "7 x NTT Fr (NR)", 7 * 0.402)
    assert h.cells()[-3:] == ["2.814", "0.89", "<= 1: met"]
    none = kvs.Row("bls12381", "NTT", 20, kvs.NATURAL, 0.48, "NTT Fr (NR)", "not run (no .anchors/bench_bls12381)")
    assert none.ratio is None and none.goal_met is None
    assert none.cells()[-3:] == ["not run (no .anchors/bench_bls12381)", "-", "<= 1"]
    assert kvs.one_line("error\n  at | line 3\n") == "error at / line 3"


@pytest.mark.parametrize("g2", [False, True], ids=["G1", "G2"])
def test_kernels_vs_sppark_times_each_msm_variant_under_its_settings_and_restores_the_runner(monkeypatch, g2):
    """msm_rows: the default rows, then each of msm_variants' rows (random scalars) timed with the runner set
    as the variant says, labelled by it, and the runner's settings back as they were after each; asked for, the
    rows over a fixed-base table last, and each table's note."""
    from types import SimpleNamespace

    from bench import kernels_vs_sppark as kvs
    from bench.gpu_msm import MsmTiming, TableTiming
    from pipeline.backends.cuda.launch import G1_LAZY_BUILT, G2_VARIANTS_BUILT
    from pipeline.backends.cuda.msm import MsmRunner
    from pipeline.curves import BLS12_381

    msm = MsmRunner(SimpleNamespace(curve=BLS12_381), allocator=None, stream=None)
    defaults = {k: getattr(msm, k) for k in ("lazy", "g1_min_blocks", "g2_field", "g2_min_blocks", "level0_flat",
                                              "scalar_pieces")}
    seen = []

    def fake_time_msms(backend, curve, g2_, logs, points, scalars, repeats, split=False):
        seen.append({k: getattr(msm, k) for k in defaults})
        for kind in scalars:
            yield SimpleNamespace(log_n=logs[0], scalars=kind, ms=1.0)
    plan = SimpleNamespace(c=20, n_windows=13, table_sets=1, table_windows=13)

    def fake_time_table_msms(backend, curve, g2_, logs, points, scalars, repeats):
        seen_tables.append({k: getattr(msm, k) for k in defaults})
        yield TableTiming(19, None, skipped="needs 90.0 GB, 70.0 GB free")
        for kind in scalars:
            yield TableTiming(logs[0], MsmTiming(curve.name, "G", logs[0], kind, 0.5, plan), 4391.2, 41.94)
    seen_tables = []
    monkeypatch.setattr(kvs, "time_msms", fake_time_msms)
    monkeypatch.setattr(kvs, "time_table_msms", fake_time_table_msms)
    backend = SimpleNamespace(runtime=lambda curve: SimpleNamespace(msm=msm))
    scalars = {"random": None, "80% {0,1}": None}
    rows = list(kvs.msm_rows(backend, BLS12_381, g2, [20], None, scalars, "not run (test)"))
    assert not seen_tables  # no table rows unless asked for
    variants = kvs.msm_variants(msm, g2)
    others = len(G2_VARIANTS_BUILT) - 1 if g2 else len(G1_LAZY_BUILT) - 1
    assert len(variants) == 2 + others and variants[0] == (kvs.PLAIN_FIELD, {"lazy": False})
    assert variants[1] == (kvs.WHOLE_COPY, {"scalar_pieces": 1})
    assert [r.input for r in rows[2:]] == [f"random, {label}" for label, _ in variants]
    # with the tables: both kinds over the table, after the variants, under the defaults; one note a table
    notes = []
    with_tables = list(kvs.msm_rows(backend, BLS12_381, g2, [20], None, scalars, "not run (test)", notes, True))
    assert with_tables[:len(rows)] == rows and seen_tables == [defaults]
    group = "G2" if g2 else "G1"
    assert [(r.input, r.ours_ms, r.against) for r in with_tables[len(rows):]] == [
        (f"random, {kvs.FIXED_BASE}", 0.5, f"{group} MSM"), (f"80% {{0,1}}, {kvs.FIXED_BASE}", 0.5, f"{group} MSM 80%{{0,1}}")]
    assert notes == [f"bls12381 {group} fixed-base table 2^19: no table (needs 90.0 GB, 70.0 GB free)",
                     f"bls12381 {group} fixed-base table 2^20: c = 20, 13 windows, 1 bucket set, 13 in the table, "
                     "41.9 GB, built in 4391 ms"]
    assert seen[0] == defaults  # the default rows under the defaults
    for settings, during in zip((s for _, s in variants), seen[1:]):
        assert during == {**defaults, **settings}
    assert {k: getattr(msm, k) for k in defaults} == defaults


def test_fixed_base_rows_put_each_table_timing_beside_the_plain_msm_and_sppark(monkeypatch):
    """bench.gpu_msm_fixed_base.rows_for: per table variant (width, bucket sets) a row per size and kind, the plain
    MSM of that size and kind beside it, sppark's row of that kind, the goal; a table without room leaves no row."""
    from types import SimpleNamespace

    from bench import gpu_msm_fixed_base as fb
    from bench.gpu_msm import MsmTiming, TableTiming
    from pipeline.curves import BN254

    calls = []

    def fake_plain(backend, curve, g2, logs, points, scalars, repeats):
        for k in logs:
            for kind in scalars:
                yield MsmTiming(curve.name, "G2", k, kind, 10.0 * k, SimpleNamespace(c=15))

    def fake_tables(backend, curve, g2, logs, points, scalars, repeats, c, sets, profile):
        calls.append((c, sets, profile))
        yield TableTiming(logs[0], None, skipped="needs 1.0 GB, 0.5 GB free")
        for k in logs[1:]:
            for kind in scalars:
                plan = SimpleNamespace(c=c or 17, n_windows=15, table_sets=sets, table_windows=-(-15 // sets))
                yield TableTiming(k, MsmTiming(curve.name, "G2", k, kind, 6.0 * k, plan), 133.4, 2.04)
    monkeypatch.setattr(fb, "time_msms", fake_plain)
    monkeypatch.setattr(fb, "time_table_msms", fake_tables)
    sppark = {("G2 MSM", 22): 300.0, ("G2 MSM 80%{0,1}", 22): 100.0}
    rows = fb.rows_for(None, BN254, True, [20, 22], sppark, ("plan", "18/2"))
    assert calls == [(None, 1, False), (18, 2, False)]
    assert rows[0] == ["bn128", "G2", "2^22", "random", "220.00 (c = 15)",
                       "132.00 (c = 17, 15 windows, 1 bucket set, 15 in the table)", "0.60", "300.00", "0.73", "0.44",
                       "met", "133", "2.0"]
    assert rows[1][3] == "80% {0,1}" and rows[1][7:11] == ["100.00", "2.20", "1.32", "not met"]
    assert rows[2][5] == "132.00 (c = 18, 15 windows, 2 bucket sets, 8 in the table)" and len(rows) == 4


def test_a_fixed_base_table_is_timed_only_where_it_fits_the_free_device_memory():
    """bench.gpu_msm.table_room: the table, its build's scratch, one MSM's scratch and the margin against the
    device's free bytes, read after the pool's unused memory is given back."""
    from types import SimpleNamespace

    from bench import gpu_msm
    from pipeline.backends.cuda.msm import MsmRunner
    from pipeline.curves import BLS12_381

    msm = MsmRunner(SimpleNamespace(curve=BLS12_381), allocator=None, stream=None)
    n = 1 << 24
    need = (msm.table_bytes(True, n) + msm.table_build_bytes(True, n) + msm.scratch_bytes(n, True, fixed=True)
            + gpu_msm.TABLE_MARGIN)
    assert msm.table_bytes(True, n) == 96 * 2 * msm.plan_fixed(n).table_windows * n  # affine G2: 4 Fq of 48 bytes
    trims = []
    for free, expected in ((need, None), (need - 1, f"needs {need / 1e9:.1f} GB, {(need - 1) / 1e9:.1f} GB free")):
        backend = SimpleNamespace(allocator=SimpleNamespace(trim=lambda: trims.append(1)),
                                  device=SimpleNamespace(free_bytes=lambda free=free: free))
        assert gpu_msm.table_room(backend, msm, True, n) == expected
    assert len(trims) == 2


@pytest.mark.parametrize("log_n", [20, 24])
@pytest.mark.parametrize("dependent_built", [False, True])
def test_kernels_vs_sppark_times_each_ntt_variant_with_its_plan_and_restores_the_runner(monkeypatch, log_n,
                                                                                        dependent_built):
    """time_ntt_variants over a real NttRunner whose launches are recorded: the session-38 rows (the short pass at
    each place but the default's, two transforms in a row, compact twiddles, and where the kernels are built for
    them the dependent launches the other way) launch the plans their labels name, only where those plans differ
    from the default (2^24 has no short pass), and the runner's settings are the defaults again afterwards. Whatever
    launch.py's defaults are: the next device session switches them where they win."""
    from types import SimpleNamespace

    from bench import kernels_vs_sppark as kvs
    from pipeline.backends.cuda import ntt as ntt_module
    from pipeline.backends.cuda.ntt import SHORT_PASS_PLACES, natural_plan, pass_plan
    from tests.backends.cuda.launch_recorder import recorded_ntt_runner

    monkeypatch.setattr(kvs, "NTT_DEPENDENT_BUILT", dependent_built)
    monkeypatch.setattr(ntt_module, "NTT_DEPENDENT_BUILT", dependent_built)
    if not dependent_built:  # dependent by default only over kernels built with the wait
        for module in (kvs, ntt_module):
            monkeypatch.setattr(module, "NTT_DEPENDENT_PASSES", False)
    rec, ntt = recorded_ntt_runner(22)  # every call's launches queued as they are
    ntt._coset_tables[log_n] = SimpleNamespace(consts=SimpleNamespace(ptr=0x555))  # the coset row's tables
    layouts = []
    monkeypatch.setattr(ntt, "ensure_twiddles", lambda log_n, compact=False: layouts.append(compact))
    settings = ("pass_kernel", "radix_log", "stages_per_pass", "fused_reversal", "natural_in_place",
                "natural_short_pass", "radix_short_pass", "dependent_passes", "tiled_bit_reverse")
    defaults = {k: getattr(ntt, k) for k in settings}
    launched = []

    def fake_time_ms(stream, fn, warmup=1, repeat=5):
        rec.events.clear()
        rec.dependent.clear()
        fn()
        launched.append([e[2] for e in rec.events if e[0] == "launch"])
        dependent.append(list(rec.dependent))
        return 1.0
    dependent = []
    monkeypatch.setattr(kvs, "time_ms", fake_time_ms)
    rows = kvs.time_ntt_variants(SimpleNamespace(stream=None), ntt, 0x900000, log_n, 1, stages_compared=())
    labels = [label for _, label in rows]
    by_label = dict(zip(labels, launched))

    def planned(args_list, groups):  # (lo, k, tl) of each launch: ntt_pass's args[3:6], the pairs kernel's [2:5]
        return [tuple(a[3:6]) if groups else tuple(a[2:5]) for a in args_list]
    # 2^20 (4 + 8 + 8 stages): every place moves the short pass; 2^24 (8 + 8 + 8): none has one to move
    natural_moved = {f"{kvs.NATURAL}, the short pass at the {p}": p for p in SHORT_PASS_PLACES
                     if log_n == 20 and p != defaults["natural_short_pass"]}
    radix_moved = {f"{kvs.RADIX_ONLY}, the short pass at the {p}": p for p in ("top", "middle")
                   if log_n == 20 and p != defaults["radix_short_pass"]}
    assert {label for label in labels if ", the short pass at the " in label} == {*natural_moved, *radix_moved}
    assert len(natural_moved) == (2 if log_n == 20 else 0) and len(radix_moved) == (1 if log_n == 20 else 0)
    assert kvs.moved_short_passes(log_n) == (list(natural_moved.values()), list(radix_moved.values()))  # H's rows too
    for label, place in natural_moved.items():
        assert planned(by_label[label], True) == natural_plan(log_n, short_pass=place)
    for label, place in radix_moved.items():
        assert planned(by_label[label], False) == pass_plan(log_n, False, short_pass=place)
    flipped = [f"{kvs.NATURAL}, {kvs.DEPENDENT_FLIPPED}", f"{kvs.RADIX_ONLY}, {kvs.DEPENDENT_FLIPPED}"]
    assert all((label in labels) == dependent_built for label in flipped)
    for label, flags in zip(labels, dependent):
        if (label in flipped) != defaults["dependent_passes"]:  # every pass after a transform's first dependent
            assert not flags[0] and any(flags), label
            if label in flipped:  # one transform of three passes
                assert flags == [False, True, True]
        else:
            assert not any(flags), label
    two = by_label[f"{kvs.NATURAL}, two in a row (time / 2)"]
    assert planned(two, True) == natural_plan(log_n, short_pass=defaults["natural_short_pass"]) * 2
    assert f"{kvs.NATURAL}, compact twiddles" in labels and True in layouts and layouts[-1] is False
    assert {k: getattr(ntt, k) for k in settings} == defaults


def test_kernels_vs_sppark_table_keeps_our_rows_where_sppark_is_missing(tmp_path):
    from bench import kernels_vs_sppark as kvs
    from bench.plots.tables import read_tables

    notes = ["sppark bn128: 9 s", "sppark bls12381: 0 s, not run (no .anchors/bench_bls12381)"]
    text = kvs.markdown(_vs_sppark_rows(kvs), "NVIDIA H200", notes)
    assert text.startswith("# Our MSM and NTT kernels against sppark's on NVIDIA H200, same call (issue 16)\n")
    assert "- sppark bls12381: 0 s, not run (no .anchors/bench_bls12381)\n" in text
    (tmp_path / "t.md").write_text(text)
    tables = read_tables(tmp_path / "t.md")
    assert [len(t) for t in tables] == [12, 2, 8, 4, 14]  # G1, G2, NTT, H, then the summary (7 lines a curve)
    g1 = {(r["curve"], r["n"], r["input"]): r for r in tables[0]}
    assert g1[("bn128", "2^22", "80% {0,1}, 0/1 split")]["ours ÷ sppark"] == "0.80"  # 12 / 15
    assert g1[("bn128", "2^22", "80% {0,1}, 0/1 split")]["goal"] == "<= 0.8: met"
    missing = g1[("bls12381", "2^20", "random")]
    assert (missing["ours ms"], missing["sppark ms"], missing["ours ÷ sppark"], missing["goal"]) == \
        ("9.000", "not run (no .anchors/bench_bls12381)", "-", "<= 0.8")
    summary = {(r["curve"], r["kernel"], r["input"]): r for r in tables[-1]}
    g1_random = summary[("bn128", "G1 MSM", "random")]
    assert (g1_random["sizes"], g1_random["ours ÷ sppark"], g1_random["at the largest n"], g1_random["met at"]) == \
        ("2^20..2^22", "0.72-0.97", "0.97", "1 of 2")
    assert summary[("bls12381", "H", kvs.QUOTIENT)]["met at"] == "-"



def test_streamed_keys_checks_every_saved_proof_with_snarkjs(tmp_path, capsys):
    """--save-proofs writes every proof of every row with the key's verification key; --verify-saved
    runs them all through snarkjs (issue 12's 100-partition runs, checked off the GPU host). A proof
    with a changed public signal counts as not verified."""
    import json

    from bench.streamed_keys import verify_saved

    d = REPO / "tests" / "fixtures" / "bn128" / "multiplier"
    proof, public = json.loads((d / "proof.json").read_text()), json.loads((d / "public.json").read_text())
    wrong = [str(int(public[0]) + 1), *public[1:]]
    saved = {"vk": json.loads((d / "vk.json").read_text()),
             "rows": [{"row": "good", "proofs": [{"public": public, "proof": proof}] * 2},
                      {"row": "one bad", "proofs": [{"public": public, "proof": proof}, {"public": wrong, "proof": proof}]}]}
    path = tmp_path / "proofs.json"
    path.write_text(json.dumps(saved))
    verify_saved(str(path))
    out = capsys.readouterr().out
    assert "| good | 2 | 2 |" in out and "| one bad | 2 | 1 |" in out


def test_streamed_keys_checks_each_row_against_its_own_keys_vk(tmp_path, capsys):
    """--bit-fractions proves rows of several keys in one file: a row's own "vk" is the one its proofs
    are checked with (the file's top-level vk, the last key's, would reject them)."""
    import json

    from bench.streamed_keys import verify_saved

    d = REPO / "tests" / "fixtures" / "bn128" / "multiplier"
    proof, public = json.loads((d / "proof.json").read_text()), json.loads((d / "public.json").read_text())
    vk = json.loads((d / "vk.json").read_text())
    other_vk = {**vk, "vk_alpha_1": vk["IC"][0]}  # another key's: its alpha is some other point
    saved = {"vk": other_vk, "rows": [{"row": "own vk", "vk": vk, "proofs": [{"public": public, "proof": proof}]},
                                      {"row": "file's vk", "proofs": [{"public": public, "proof": proof}]}]}
    path = tmp_path / "proofs.json"
    path.write_text(json.dumps(saved))
    verify_saved(str(path))
    out = capsys.readouterr().out
    assert "| own vk | 1 | 1 |" in out and "| file's vk | 1 | 0 |" in out


def test_streamed_keys_compares_each_row_with_the_resident_row_of_its_own_witness_share(tmp_path):
    """Rows of two keys (two 0/1 shares) in one table: "vs resident" divides by the first resident row of
    the same share (--fixed-base on off gives two), and a refused row gets no ratio."""
    import argparse

    from bench.streamed_keys import write_table

    class Key:
        def host_bytes(self):
            return 13 * 10**9

    def row(share, budget, s_per):
        return [share, budget, 1, "placement", "1.0", s_per, "1.0", "0.970", "10.0", "20.0", "0.80", "300", "5 (1)",
                "-", "200", "yes"]

    rows = [row("80.0%", "none", "0.50"), row("80.0%", "4", "1.00"), row("95.0%", "none", "0.25"),
            row("95.0%", "none", "0.20"), row("95.0%", "4", "1.00"),
            ["95.0%", "2", 1, "refused: ValueError: too small", *["-"] * 12]]
    out = tmp_path / "t.md"
    args = argparse.Namespace(curve="bls12381", log=24, jobs=1, partitions=10, row_jobs=[], resident_jobs=None,
                              gpu_workers=[2], out=str(out))
    write_table(args, Key(), "a GPU", 25.0, rows, [])
    lines = [line for line in out.read_text().splitlines() if line.startswith("| ") and "%" in line]
    ratios = [line.split(" | ")[6] for line in lines]
    assert ratios == ["1.00", "2.00", "1.00", "0.80", "4.00", ""]  # a share's second resident row: vs its first


def test_streamed_keys_gives_the_named_row_its_own_job_count():
    """--row-jobs GIB:BATCH=JOBS: the 100-partition row among 10-partition ones in one call (session 22);
    a row no spec names keeps --jobs."""
    from bench.streamed_keys import row_jobs

    specs = ["16:10=10", "8:5=3"]
    assert row_jobs(specs, 16.0, 10, 1) == 10
    assert row_jobs(specs, 8, 5, 1) == 3
    assert row_jobs(specs, 8.0, 10, 1) == 1
    assert row_jobs(specs, 16, 5, 2) == 2
    assert row_jobs([], 16, 10, 4) == 4


def test_seed_report_shows_a_split_sections_ones_beside_it():
    """The per-partition table has an "X: ones" column after each split section (the part of X that sums
    its ones' points), and none where no partition was split."""
    from types import SimpleNamespace

    from bench.seed_report import partition_table

    split = {"gpu_total_ms": 100.0, "gpu_msm_a_ms": 8.0, "gpu_msm_a_ones_ms": 3.0, "gpu_msm_b2_ms": 29.0,
             "gpu_msm_b2_ones_ms": 9.0}
    header = partition_table([[SimpleNamespace(timings_ms=split)]]).splitlines()[0]
    names = [cell.strip() for cell in header.strip("|").split("|")]
    assert names[names.index("A") + 1] == "A: ones" and names[names.index("B2 (G2)") + 1] == "B2: ones"
    plain = {"gpu_total_ms": 100.0, "gpu_msm_a_ms": 8.0}
    assert "ones" not in partition_table([[SimpleNamespace(timings_ms=plain)]])


@pytest.mark.parametrize("curve_name", ["bn128", "bls12381"])
def test_pipe_rates_probe_builds_every_kernel_from_a_copy_of_the_sources(tmp_path, curve_name):
    from tests.conftest import nvrtc_or_skip

    nvrtc_or_skip()
    from bench.pipe_rates import ProbeKernels, add_expr, probe_source_root
    from pipeline.backends.cuda.kernel_sources import CUDA_SRC
    from pipeline.backends.cuda.kernels import build_units
    from pipeline.curves import curve_by_name

    root = probe_source_root(tmp_path)
    assert not (CUDA_SRC / "programs" / "pipe_probe.cu").exists()  # the package's sources stay as shipped
    # the additions unit on one curve, one row a group (all five rows' G2 formulas: ~1 min of NVRTC on two cores)
    table = {"pipe_probe": ProbeKernels.units["pipe_probe"]}
    if curve_name == "bls12381":
        table["add_probe"] = (add_expr("fq_lazy_t", 1), add_expr("fq2_pair_lazy_t", 1))
    built = build_units(curve_by_name(curve_name), "sm_90", tuple(table), tmp_path / "cache", table=table,
                        source_root=root)
    assert sorted(unit for _, unit in built) == sorted(table)
    for (_, name), unit in built.items():
        assert sorted(unit.lowered) == sorted(table[name])
        assert unit.cubin[:4] == b"\x7fELF"


def test_ntt_switch_ab_reports_each_values_median_and_its_ratio_range_to_the_first():
    """bench.ntt_switch_ab's table: a value's ms is the median over the rounds, its ratio the median of the rounds'
    own ratios to the first value, with their smallest and largest; values read as Python reads them."""
    from bench.ntt_switch_ab import markdown, parse_value

    assert [parse_value(t) for t in ("None", "1", "top")] == [None, 1, "top"]
    rounds = [[1.0, 0.9, 1.1], [2.0, 1.6, 2.0], [1.0, 0.95, 1.2]]  # ratios of 1: 0.9, 0.8, 0.95; of 0: 1.1, 1.0, 1.2
    text = markdown("gpu", "natural_rev_rows_log", [None, 1, 0], {"bls12381": {20: rounds}}, 3, 5)
    row = next(line for line in text.splitlines() if line.startswith("| bls12381 | 2^20 |"))
    assert row == "| bls12381 | 2^20 | 1.0000 | 0.9500 | 1.2000 | 0.900 (0.800-0.950) | 1.100 (1.000-1.200) |"
    assert "| curve | n | None ms | 1 ms | 0 ms | 1 ratio (range) | 0 ratio (range) |" in text


def test_alternating_rounds_rotate_which_setting_runs_first_and_keep_each_time_in_its_place():
    """bench.common.alternating_rounds (kernel_ab, ntt_switch_ab): round r times the settings from r on, wrapping;
    each round's list holds the times in the settings' order."""
    from bench.common import alternating_rounds

    calls = []

    def time_one(i: int) -> float:
        calls.append(i)
        return 10.0 * i + len(calls)

    per_round = alternating_rounds(3, 4, time_one)
    assert calls == [0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2]
    assert per_round[1] == [6.0, 14.0, 25.0]  # round 1 ran 1 (4th call), 2 (5th), then 0 (6th)
    assert [len(r) for r in per_round] == [3, 3, 3, 3]


def test_warm_runs_the_call_for_its_seconds_and_synchronises_between_bursts():
    """bench.common.warm (kernels_vs_sppark's first row of a size): calls in bursts of 8, a stream synchronise
    after each burst, until the wall time is spent; none for no time."""
    import time

    from bench.common import warm

    events = []

    class Stream:
        def synchronize(self):
            events.append("sync")

    start = time.perf_counter()
    warm(Stream(), lambda: events.append("call"), seconds=0.02)
    assert time.perf_counter() - start >= 0.02
    assert events[:9] == ["call"] * 8 + ["sync"] and events[-1] == "sync"
    assert events.count("call") == 8 * events.count("sync")
    events.clear()
    warm(Stream(), lambda: events.append("call"), seconds=0.0)
    assert events == []  # no time: nothing run


def test_kernel_ab_cells_are_the_medians_over_the_rounds_and_each_rounds_ratio():
    """bench.kernel_ab.before_after_cells (its MSM and NTT rows): before and after as medians over the rounds, their
    ratio, and each round's after ÷ before."""
    from bench.kernel_ab import before_after_cells

    per_round = [[2.0, 1.8], [2.2, 2.2], [1.9, 1.71]]
    assert before_after_cells(per_round, 4) == ["2.0000", "1.8000", "0.900", "0.900 1.000 0.900"]
    assert before_after_cells(per_round, 3)[:2] == ["2.000", "1.800"]


def test_ntt_latency_reports_each_modes_median_its_ratio_to_the_lone_transform_and_the_hosts_queueing():
    """bench.ntt_latency's table: per mode the median over the rounds, the rounds' own ratios to the lone
    transform (common.ratio_cell), and the host's queueing time where measured (the lone modes); host_us times the
    call alone, the stream synchronised around each."""
    from bench.ntt_latency import MODES, host_us, markdown

    rounds = [[0.30, 0.28, 0.27, 0.26, 0.26], [0.28, 0.27, 0.27, 0.25, 0.25], [0.32, 0.28, 0.28, 0.26, 0.26]]
    host = {MODES[0]: 12.34, MODES[1]: 3.21}
    text = markdown("gpu", {"bn128": {20: {"rounds": rounds, "host": host}}}, 3, 11)
    rows = [line for line in text.splitlines() if line.startswith("| bn128 | 2^20 |")]
    assert len(rows) == len(MODES)
    assert rows[0] == f"| bn128 | 2^20 | {MODES[0]} | 0.3000 | 1 | 12.3 |"
    assert rows[1] == f"| bn128 | 2^20 | {MODES[1]} | 0.2800 | 0.933 (0.875-0.964) | 3.2 |"
    assert rows[3].endswith("| 0.867 (0.812-0.893) |  |")
    events = []

    class Stream:
        def synchronize(self):
            events.append("sync")

    assert host_us(Stream(), lambda: events.append("call"), 3) >= 0
    assert events == ["sync", "call", "sync", "call", "sync", "call", "sync"]


def test_time_ms_queues_the_work_ahead_before_its_start_event(monkeypatch):
    """bench.common.time_ms's ``ahead`` (ntt_latency's "behind another"): queued before each run's start event, so
    the events hold ``fn()``'s work alone; without it nothing comes before the start event."""
    from bench.common import time_ms
    from pipeline.backends.cuda import streams

    events = []

    class FakeEvent:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return None

        def record(self, stream):
            events.append("record")

        def synchronize(self):
            events.append("sync")

        def elapsed_ms(self, start):
            return 1.0

    class Stream:
        def synchronize(self):
            events.append("stream sync")

    monkeypatch.setattr(streams, "Event", FakeEvent)
    assert time_ms(Stream(), lambda: events.append("fn"), warmup=1, repeat=2, ahead=lambda: events.append("ahead")) == 1
    assert events == ["fn", "stream sync"] + ["ahead", "record", "fn", "record", "sync"] * 2
    events.clear()
    time_ms(Stream(), lambda: events.append("fn"), warmup=0, repeat=1)
    assert events == ["stream sync", "record", "fn", "record", "sync"]


def test_stage_floor_counts_the_products_of_each_part_at_the_planned_widths():
    """The floor's counts, by hand: the H-MSM one mixed addition a (point, window) at the plan's width plus two
    full additions a bucket of running sums; the ones one addition each; six radix-2 transforms' butterflies."""
    from bench import stage_floor as sf
    from pipeline.backends.cuda.msm import plan_msm

    parts = {p.name: p for p in sf.stage_parts(20, bit_share=0.9, one_share=0.5)}  # every point finite
    n, plan = 1 << 20, plan_msm(1 << 20, 255)
    windows = -(-(254 + 1) // plan.c)  # a scalar folded below 2^254, signed digits
    assert parts["H-MSM"].products == n * windows * sf.G1_MADD + 2 * windows * plan.buckets_per_window * sf.G1_ADD
    assert sf.msm_products(3_000_000, sf.G1_MADD, sf.G1_ADD)[1:] == (17, 15)  # the tails: the 18th window empty
    ones = round(n * 0.45)
    assert parts["A, B1, C: ones (G1)"].products == 3 * ones * sf.G1_MADD
    assert parts["B2: ones (G2)"].products == ones * sf.G2_MADD
    assert parts["NTTs"].products == 6 * (n // 2) * 20 + 5 * n and parts["NTTs"].field == "fr"
    assert sf.G2_MADD > 2 * sf.G1_MADD  # an Fq2 product is worth more than two Fq products
    # 1e9 Fq products at 1 a clock an SM on 10 SMs at 100 MHz: 1 s
    assert sf.floor_ms(1e9, "fq", 1.0, 2.0, 10, 100) == pytest.approx(1000.0)
    assert sf.floor_ms(1e9, "fr", 1.0, 2.0, 10, 100) == pytest.approx(500.0)


def test_stage_floor_counts_only_the_finite_points_of_each_section():
    """B's points are infinity for half the seed circuit's ones (wires in no B row): they cost no addition in the
    floor. The shares come from the generator itself; L (the C section) is finite for every wire."""
    from bench import stage_floor as sf

    shares = sf.finite_shares(12)
    assert set(shares) == {"a", "b", "c"} and shares["c"] == (1.0, 1.0)
    assert 0.4 < shares["b"][0] < 0.6 and 0.6 < shares["a"][0] < 0.9
    half_b = {"a": (1.0, 1.0), "b": (0.5, 1.0), "c": (1.0, 1.0)}
    every, some = ({p.name: p for p in sf.stage_parts(20, 0.9, 0.5, f)} for f in (sf.ALL_FINITE, half_b))
    assert some["B2: ones (G2)"].products == pytest.approx(every["B2: ones (G2)"].products / 2, rel=1e-5)
    assert some["A, B1, C: ones (G1)"].products == pytest.approx(every["A, B1, C: ones (G1)"].products * 2.5 / 3,
                                                               rel=1e-5)
    assert some["B2: tail (G2)"].products == every["B2: tail (G2)"].products  # others all finite here
    assert some["H-MSM"].products == every["H-MSM"].products


def test_infinity_warps_counts_a_warps_additions_before_and_after_the_skip():
    """Hand-made lists: 4 items a warp, 8 entries an item (32 a warp)."""
    import numpy as np

    from bench.infinity_warps import warp_turns

    assert warp_turns(np.ones(64, dtype=bool), 8, 4) == (1.0, 1.0, 1.0)
    # Item 0 of each warp finite, the others infinity: the warp waits for item 0 before and after the skip; dealt
    # in turn, those 8 entries go two to each item.
    first = np.zeros((2, 4, 8), dtype=bool)
    first[:, 0, :] = True
    assert warp_turns(first.ravel(), 8, 4) == (1.0, 1.0, 0.25)
    # Every other turn infinity on every item: before, a turn with no finite lane costs nothing; dealt in turn,
    # the finite entries (even places) all go to items 0 and 2, so striding can lose to a periodic pattern.
    turns = np.zeros((2, 4, 8), dtype=bool)
    turns[:, :, ::2] = True
    assert warp_turns(turns.ravel(), 8, 4) == (0.5, 0.5, 1.0)
    # One item with 6 finite entries, the others 2: the skip waits for 6; dealt in turn, items 2 and 3 get 4.
    uneven = np.zeros((1, 4, 8), dtype=bool)
    uneven[0, 0, :6] = True
    uneven[0, 1:, 6:] = True
    assert warp_turns(np.concatenate([uneven.ravel(), np.ones(5, dtype=bool)]), 8, 4) == (1.0, 0.75, 0.5)
    with pytest.raises(ValueError, match="fills no warp"):
        warp_turns(np.ones(31, dtype=bool), 8, 4)


def test_infinity_warps_groups_private_wires_by_their_points_class():
    import numpy as np

    from bench.infinity_warps import grouped_order

    finite = {"a": np.array([1, 0, 1, 0, 1, 1, 0, 0], dtype=bool), "b": np.array([0, 0, 1, 1, 0, 1, 0, 1], dtype=bool)}
    order = grouped_order(finite, 2)
    assert order.tolist() == [0, 1, 2, 5, 4, 3, 7, 6]  # public 0, 1 kept; then both, A only, B only, neither


def test_infinity_warps_orders_a_tail_by_bucket_without_zero_digits():
    import numpy as np

    from bench.infinity_warps import tail_order

    others = np.zeros(10_000, dtype=bool)
    others[::3] = True
    order = tail_order(others, 2, np.random.default_rng(1))  # digits -2..2: a fifth are zero
    assert len(set(order.tolist())) == len(order) and others[order].all()
    assert 0.75 * others.sum() < len(order) < 0.85 * others.sum()
    assert not np.array_equal(order, np.sort(order))  # bucket order, not wire order


def test_stage_floor_reads_a_seed_scale_table_and_subtracts_the_ones_from_a_section(tmp_path):
    from bench import stage_floor as sf

    table = tmp_path / "seed.md"
    table.write_text("# x\n\n## 2^26: per partition (ms, medians over the jobs)\n\n"
                     "| partition | gpu | A | A: ones | NTTs |\n|---|---|---|---|---|\n"
                     "| 0 | 900 | 50 | 20 | 130 |\n| all | 826 | 42 | 13 | 128 |\n")
    medians = sf.measured_medians(table, 26)
    assert medians == {"gpu": 826.0, "A": 42.0, "A: ones": 13.0, "NTTs": 128.0}
    tail = sf.Part("tail", "", 0.0, "fq", ("A",), ("A: ones",))
    assert sf.measured_ms(tail, medians) == 29.0
    assert sf.measured_ms(sf.Part("x", "", 0.0, "fq", ("B1",)), medians) is None
    with pytest.raises(ValueError, match="no per-partition table at 2\\^27"):
        sf.measured_medians(table, 27)


def test_pipe_rates_source_copy_holds_both_probe_units(tmp_path):
    """The additions probe is a unit of its own that includes the pipe probe from the copy's root."""
    from bench import pipe_rates

    root = pipe_rates.probe_source_root(tmp_path)
    units = pipe_rates.probe_units()
    for unit in units:
        assert (root / "programs" / f"{unit}.cu").is_file()
    assert '#include "programs/pipe_probe.cu"' in (root / "programs" / "add_probe.cu").read_text()
    assert set(units["add_probe"]) == {pipe_rates.add_expr(f, a) for _, f, a in pipe_rates.ADD_ROWS}
    assert pipe_rates.ProbeKernels.default_units == ("pipe_probe",)
