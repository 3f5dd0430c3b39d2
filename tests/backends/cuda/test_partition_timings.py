"""A partition's timings from its phases: a split section's ones' point sum is timed on its own and
stays a part of the section's time, and the MSM total counts every phase once."""
import pytest

from pipeline.backends.cuda.work import partition_timings


def test_a_split_sections_ones_are_a_part_of_its_time_and_counted_once():
    phases = {"upload_ms": 1.0, "spmv_ms": 2.0, "ntt_ms": 4.0, "split_ms": 0.5,
              "msm_a_ones_ms": 3.0, "msm_a_ms": 5.0, "msm_b1_ones_ms": 2.5, "msm_b1_ms": 4.0,
              "msm_b2_ones_ms": 9.0, "msm_b2_ms": 20.0, "msm_c_ones_ms": 2.0, "msm_c_ms": 3.5,
              "msm_h_ms": 40.0, "download_ms": 0.25}
    timings = partition_timings(phases)
    assert timings["msm_a_ms"] == 8.0 and timings["msm_a_ones_ms"] == 3.0
    assert timings["msm_b1_ms"] == 6.5 and timings["msm_b2_ms"] == 29.0 and timings["msm_c_ms"] == 5.5
    assert timings["msm_h_ms"] == 40.0  # no ones
    assert timings["h_ms"] == 7.0
    # the phases are disjoint intervals: their sum, not the folded sections'
    assert timings["msm_ms"] == pytest.approx(0.5 + 3 + 5 + 2.5 + 4 + 9 + 20 + 2 + 3.5 + 40)
    assert timings["msm_ms"] == pytest.approx(timings["split_ms"] + sum(
        timings[f"msm_{s}_ms"] for s in ("a", "b1", "b2", "c", "h")))
    assert phases["msm_a_ms"] == 5.0  # the caller's phases are left as they were


def test_a_partition_without_the_split_keeps_its_sections_times():
    phases = {"upload_ms": 1.0, "spmv_ms": 2.0, "ntt_ms": 4.0, "msm_a_ms": 5.0, "msm_b1_ms": 4.0,
              "msm_c_ms": 3.0, "msm_h_ms": 10.0, "msm_combine_ms": 0.5}
    timings = partition_timings(phases)
    assert {k: timings[k] for k in phases} == phases
    assert not any(k.endswith("_ones_ms") for k in timings)
    assert timings["msm_ms"] == pytest.approx(22.5) and timings["h_ms"] == 7.0
