"""bench/plots: every plot regenerates from the committed tables, and no plot names a folder outside the repo."""
from __future__ import annotations

import pytest

pytest.importorskip("matplotlib", reason="matplotlib (the test/bench extra) draws the plots")

from bench.plots import engine, timeline  # noqa: E402
from bench.plots.__main__ import make_all  # noqa: E402
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
