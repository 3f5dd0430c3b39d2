"""bench/plots: every plot regenerates from the committed tables, and no plot names a folder outside the repo."""
from __future__ import annotations

import pytest

pytest.importorskip("matplotlib", reason="matplotlib (the test/bench extra) draws the plots")

from bench.plots import engine, timeline  # noqa: E402
from bench.plots import make_all  # noqa: E402
from bench.plots.tables import RESULTS, log2_size, number, read_tables  # noqa: E402


def test_every_plot_regenerates_from_the_committed_tables(tmp_path):
    written = {p.name for p in make_all(tmp_path)}
    assert {"msm_time_vs_size.png", "ntt_time_vs_size.png"} <= written
    for table in engine.engine_tables():
        assert f"{table.stem}.throughput.png" in written
    assert "engine_cuda_bls12381_chain_2e14_devices.timeline.png" in written
    assert all((tmp_path / name).stat().st_size > 10_000 for name in written)


def test_tables_read_as_rows_and_numbers():
    msm = read_tables(RESULTS / "gpu_msm.md")
    assert len(msm) == 2  # the timings, then the phases
    first = msm[0][0]
    assert (first["curve"], first["group"], log2_size(first["n"])) == ("bls12381", "G1", 16)
    assert number("99%") == 99.0 and number("2^10") == 1024.0 and number("-") is None


def test_titles_name_no_folder_the_run_read_from():
    for table in engine.engine_tables():
        title = engine.title_of(table)
        assert "/tmp/" not in title and ".extra" not in title and "//" not in title, title


def test_an_old_svg_timeline_reads_back_as_its_intervals():
    svg = RESULTS / "engine_cuda_bls12381_chain_2e14_devices.timeline.svg"
    data = timeline.read_svg(svg)
    boxes = svg.read_text().count("<title>")
    assert len(data["intervals"]) == boxes and data["level"] == "dev=2 gw=2 jif=10"
    rows = {iv["row"] for iv in data["intervals"]}
    assert rows == {"synthesize", "prep_msm", "gpu0.0", "gpu0.1", "gpu1.0", "gpu1.1", "epilogue"}
    gpu = [iv for iv in data["intervals"] if iv["stage"] == "gpu"]
    assert all(iv["row"].startswith("gpu") and iv["end_s"] > iv["start_s"] >= 0 for iv in gpu)
    assert max(iv["end_s"] for iv in data["intervals"]) == pytest.approx(1.33, abs=0.02)  # the SVG's own axis


def test_kernels_vs_sppark_plot_draws_a_small_result_set_with_sppark_missing_on_one_curve(tmp_path):
    import matplotlib.pyplot as plt

    from bench import kernels_vs_sppark as kvs
    from bench.plots.kernels import plot_vs_sppark, table_series

    rows = []
    for curve, sppark in (("bn128", {("G1 MSM", 20): 12.5, ("G1 MSM", 22): 31.0, ("G1 MSM 80%{0,1}", 20): 6.25,
                                      ("G2 MSM", 20): 40.0, ("NTT Fr (NR)", 20): 0.4, ("NTT Fr (NR)", 21): 0.8}),
                          ("bls12381", "not run (no .anchors/bench_bls12381)")):
        for log_n in (20, 22):
            for kind, against in (("random", "G1 MSM"), ("80% {0,1}, 0/1 split", "G1 MSM 80%{0,1}")):
                rows.append(kvs.Row(curve, "G1 MSM", log_n, kind, 2.0 ** (log_n - 17), against,
                                    kvs.sppark_ms(sppark, against, log_n)))
        rows.append(kvs.Row(curve, "G2 MSM", 20, "random", 36.0, "G2 MSM", kvs.sppark_ms(sppark, "G2 MSM", 20)))
        for log_n in (20, 21):
            rows += [kvs.Row(curve, "NTT", log_n, kvs.NATURAL, 0.5 * 2 ** (log_n - 20), kvs.SPPARK_NTT,
                             kvs.sppark_ms(sppark, kvs.SPPARK_NTT, log_n)),
                     kvs.Row(curve, "H", log_n, kvs.QUOTIENT, 2.6 * 2 ** (log_n - 20), "7 x NTT Fr (NR)",
                             kvs.sppark_ms(sppark, kvs.SPPARK_NTT, log_n, times=7))]
    table = tmp_path / "kernels_vs_sppark.md"
    table.write_text(kvs.markdown(rows, "NVIDIA H200", ["a note"]))
    png = plot_vs_sppark(table, tmp_path / "kernels_vs_sppark.png", plt)
    assert png == tmp_path / "kernels_vs_sppark.png" and png.stat().st_size > 10_000
    # the grid's own plot draws the headline rows only (the defaults, the split, the tables), under short labels
    heads = kvs.headlines()
    assert all((r.kernel, r.input) in heads for r in rows)
    assert heads["G2 MSM", f"random, {kvs.FIXED_BASE}"] == "random, over a fixed-base table"
    assert ("G1 MSM", f"random, {kvs.PLAIN_FIELD}") not in heads and ("NTT", kvs.TILED_REVERSE) not in heads
    drawn = plot_vs_sppark(table, tmp_path / "headlines.png", plt, heads)
    assert drawn.stat().st_size > 10_000
    g1 = [r for r in read_tables(table)[0] if r["input"] == "random"]
    assert table_series(g1, lambda r: r["curve"], "sppark ms") == {"bn128": [(20, 12.5), (22, 31.0)]}  # no 12381
    assert table_series(g1, lambda r: r["curve"], "ours ms")["bls12381"] == [(20, 8.0), (22, 32.0)]
