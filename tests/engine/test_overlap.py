"""Real proofs on the CPU backend, with the timeline recorded: the GPU lock holds one partition
at a time, the epilogue and the CPU G2 MSM of one partition overlap the next one's gpu stage,
and the event loop stays responsive while every pool is busy."""
from __future__ import annotations

import asyncio
import statistics
import sys

from pipeline.engine import Engine, EngineConfig
from tests.engine.conftest import key_files, wtns


def overlaps(a, b) -> bool:
    return a.start < b.end and b.start < a.end


async def test_epilogue_and_cpu_g2_msm_overlap_the_next_gpu_stage_and_proofs_verify():
    config = EngineConfig(backend="cpu", gpu_workers_per_device=2, epilogue_workers=2, g2_msm_placement="cpu",
                          g2_msm_executor="thread", verify_proofs=True)
    async with Engine(config) as engine:
        engine.register_key("chain", **key_files("bn128", "chain_2e8"))
        await engine.preload("chain")
        proofs = await (await engine.submit("chain", [wtns("bn128", "chain_2e8")] * 3)).result()
        timeline = engine.timeline()
    assert all(p.verified for p in proofs)
    gpu = sorted((iv for iv in timeline if iv.stage == "gpu"), key=lambda iv: iv.start)
    assert len(gpu) == 3 and all(a.end <= b.start for a, b in zip(gpu, gpu[1:]))  # the lock: one at a time
    after_lock = [iv for iv in timeline if iv.stage in ("epilogue", "b_g2_msm")]
    overlapping = {(iv.stage, iv.partition) for iv in after_lock for g in gpu
                   if g.partition != iv.partition and overlaps(iv, g)}
    assert any(stage == "epilogue" for stage, _ in overlapping), timeline
    assert any(stage == "b_g2_msm" for stage, _ in overlapping), timeline


async def loop_lags_under_full_load() -> list[float]:
    """Loop-lag samples (ms, sorted) while every stage works on four partitions, with the loop as
    production runs it: asyncio's debug mode (on for every engine test) records a traceback for
    each handle the loop schedules, which alone multiplied the median lag by five (1.6 -> 8.6 ms,
    and ~20 ms under pytest's capture), so this measurement turns it off."""
    asyncio.get_running_loop().set_debug(False)
    config = EngineConfig(backend="cpu", gpu_workers_per_device=2, synthesize_workers=2, epilogue_workers=2,
                          loop_lag_interval_s=0.02, gil_switch_interval_s=0.001)
    async with Engine(config) as engine:
        engine.register_key("chain", **key_files("bn128", "chain_2e8"))
        await engine.preload("chain")
        engine.metrics.loop_lags.clear()
        job = await engine.submit("chain", [{"x0": 7, "k": 123456789, "c": 987654321}] * 2
                                  + [wtns("bn128", "chain_2e8")] * 2)
        await job.result()
        lags = sorted(engine.metrics.loop_lags)
    assert sys.getswitchinterval() == 0.005  # restored at shutdown
    assert len(lags) >= 10
    return lags


async def test_loop_lag_stays_under_20_ms_with_every_stage_busy():
    """The CPU backend is pure Python in worker threads: GIL-bound. With the default 5 ms switch
    interval the loop waits for the GIL (median 12 ms measured); the engine's knob sets 1 ms.

    A wall-clock bound on a shared 2-core CI machine: another process's burst can push one run
    over it, while a real regression (the loop starved of the GIL) fails every run. So: p95, not
    max, and a second run only when the first is over the bound."""
    runs = []
    for _ in range(2):
        lags = await loop_lags_under_full_load()
        p95 = lags[int(0.95 * (len(lags) - 1))]
        runs.append(f"p95 {p95:.1f} ms, median {statistics.median(lags):.1f} ms, max {lags[-1]:.1f} ms")
        if p95 < 20:
            return
    raise AssertionError(f"loop lag p95 >= 20 ms in both runs: {'; '.join(runs)}")
