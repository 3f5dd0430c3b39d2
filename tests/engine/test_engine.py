"""The library API with the real CPU backend: proofs verify, bad input stays in its own job,
idempotent resubmission, events, status and metrics, shutdown."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import orjson
import pytest

from pipeline.engine import (Engine, EngineConfig, EngineNotRunning, IdempotencyConflict, JobCancelled, JobFailed,
                             JobState, UnknownKey)
from pipeline.formats.types import VerificationKey
from pipeline.formats.wtns import read_wtns
from pipeline.formats.zkey import read_zkey
from pipeline.groth16.verifier import verify
from tests.conftest import fixture_dir, snarkjs_verify
from tests.engine.conftest import key_files, wtns

CPU = dict(backend="cpu", gpu_workers_per_device=1, synthesize_workers=1, epilogue_workers=1)


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
async def test_proofs_from_a_wtns_and_from_inputs_verify_with_ours_and_snarkjs(curve, tmp_path):
    files = key_files(curve, "multiplier")
    inputs = json.loads((fixture_dir(curve, "multiplier") / "input.json").read_text())
    async with Engine(EngineConfig(**CPU, verify_proofs=True)) as engine:
        engine.register_key("mult", **files)
        job = await engine.submit("mult", [wtns(curve, "multiplier"), {"a": 5, "b": 7}, inputs])
        proofs = await job.result()
    assert [p.index for p in proofs] == [0, 1, 2]
    assert [p.public_json for p in proofs] == [["33"], ["35"], ["33"]]
    assert all(p.verified for p in proofs)
    vk = VerificationKey.from_zkey(read_zkey(files["zkey_path"]))
    assert verify(vk, proofs[1].public_signals, proofs[1].pi_a, proofs[1].pi_b, proofs[1].pi_c)
    assert not verify(vk, (34,), proofs[1].pi_a, proofs[1].pi_b, proofs[1].pi_c)  # rejects a wrong public input
    (tmp_path / "proof.json").write_bytes(orjson.dumps(proofs[1].proof_json))
    (tmp_path / "public.json").write_bytes(orjson.dumps(proofs[1].public_json))
    vk_json = fixture_dir(curve, "multiplier") / "vk.json"
    assert snarkjs_verify(vk_json, tmp_path / "public.json", tmp_path / "proof.json")


async def test_timings_cover_every_stage():
    async with Engine(EngineConfig(**CPU, g2_msm_placement="cpu", g2_msm_executor="thread")) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        (proof,) = await (await engine.submit("mult", [wtns("bn128", "multiplier")])).result()
    for name in ("synth_ms", "prep_msm_ms", "gpu_lock_wait_ms", "gpu_total_ms", "gpu_h_ms", "gpu_msm_ms",
                 "b_g2_msm_ms", "epilogue_ms", "total_ms", "synthesize_queue_ms", "gpu_queue_ms"):
        assert proof.timings_ms[name] >= 0, name
    assert proof.timings_ms["total_ms"] >= proof.timings_ms["gpu_total_ms"]


async def test_one_bad_witness_fails_its_job_with_the_constraint_named_and_others_complete():
    good = wtns("bn128", "multiplier")
    witness = read_wtns(good)
    values = witness.values.copy()
    values[1, 0] += 1  # c != a*b
    broken = dataclasses.replace(witness, path="broken.wtns", values=values)
    async with Engine(EngineConfig(**CPU)) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        bad_job = await engine.submit("mult", [good, broken, good])
        other = await engine.submit("mult", [good])
        garbage = await engine.submit("mult", [str(fixture_dir("bn128", "multiplier") / "input.json")])
        wrong_curve = await engine.submit("mult", [wtns("bls12381", "multiplier")])
        with pytest.raises(JobFailed, match=r"partition 1 \(synthesize\).*broken.wtns.*constraint 0 of"):
            await bad_job.result()
        assert len(await other.result()) == 1
        with pytest.raises(JobFailed, match="input.json"):
            await garbage.result()
        with pytest.raises(JobFailed, match="bls12381"):
            await wrong_curve.result()
        assert bad_job.state is JobState.FAILED
        after = await engine.submit("mult", [good])  # the engine is unharmed
        assert len(await after.result()) == 1
        status = engine.status()
    assert status["partitions_in_flight"] == 0 and status["host_budget"]["used_bytes"] == 0
    assert status["keys"]["keys"]["mult"]["refs"] == 0


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
async def test_a_witness_value_at_or_above_r_fails_its_job_in_prep_msm_and_others_complete(curve):
    """v + r satisfies every constraint mod r (the R1CS check passes) but would be a wrong MSM scalar."""
    good = wtns(curve, "multiplier")
    witness = read_wtns(good)
    values = witness.values.copy()
    r = witness.curve.fr.modulus
    plus_r = int.from_bytes(values[3].tobytes(), "little") + r
    values[3] = [(plus_r >> (64 * i)) & (2**64 - 1) for i in range(4)]
    shifted = dataclasses.replace(witness, path="plus_r", values=values)
    async with Engine(EngineConfig(**CPU)) as engine:
        engine.register_key("mult", **key_files(curve, "multiplier"))
        bad_job = await engine.submit("mult", [good, shifted])
        other = await engine.submit("mult", [good])
        with pytest.raises(JobFailed, match=rf"partition 1 \(prep_msm\): WitnessOutOfRange: plus_r: signal 3 is {plus_r},"):
            await bad_job.result()
        assert len(await other.result()) == 1
        status = engine.status()
    assert status["partitions_in_flight"] == 0 and status["host_budget"]["used_bytes"] == 0


async def test_inputs_for_a_key_without_wasm_and_unknown_keys_are_clear_errors():
    files = key_files("bn128", "multiplier")
    async with Engine(EngineConfig(**CPU)) as engine:
        engine.register_key("mult", zkey_path=files["zkey_path"])
        job = await engine.submit("mult", [{"a": 1, "b": 2}])
        with pytest.raises(JobFailed, match="registered without wasm_path"):
            await job.result()
        with pytest.raises(UnknownKey, match="nope"):
            await engine.submit("nope", [wtns("bn128", "multiplier")])
        with pytest.raises(TypeError, match="partition 0"):
            await engine.submit("mult", [42])
        for one_partition in (wtns("bn128", "multiplier"), Path(wtns("bn128", "multiplier")), {"a": 1, "b": 2}):
            with pytest.raises(TypeError, match="a list of partitions"):  # not iterated character by character
                await engine.submit("mult", one_partition)
        with pytest.raises(FileNotFoundError):
            engine.register_key("x", zkey_path="/no/such.zkey")


async def test_a_request_id_submitted_twice_is_one_job():
    async with Engine(EngineConfig(**CPU)) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        first = await engine.submit("mult", [wtns("bn128", "multiplier")], request_id="req-1")
        again = await engine.submit("mult", [wtns("bn128", "multiplier")], request_id="req-1")
        assert again is first
        proofs = await first.result()
        assert (await engine.submit("mult", [wtns("bn128", "multiplier")], request_id="req-1")) is first
        with pytest.raises(IdempotencyConflict, match="req-1"):
            await engine.submit("mult", [wtns("bn128", "multiplier")] * 2, request_id="req-1")
        assert engine.job_by_request("req-1") is first and engine.job(first.id) is first
        assert engine.status()["counters"]["jobs_submitted"] == 1
    assert len(proofs) == 1


async def test_events_report_queued_running_each_partition_and_done():
    seen = []
    async with Engine(EngineConfig(**CPU)) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        job = await engine.submit("mult", [wtns("bn128", "multiplier")] * 2, on_event=seen.append)
        kinds = [ev.kind async for ev in job.events()]
        assert job.progress == (2, 2)
        replay = [ev.kind async for ev in job.events()]  # a late subscriber gets the history
    assert kinds == ["queued", "running", "partition_done", "partition_done", "done"]
    assert replay == kinds and [ev.kind for ev in seen] == kinds


async def test_status_and_prometheus_expose_queues_budgets_and_lock_use():
    async with Engine(EngineConfig(**CPU, host_memory_budget_bytes=10**7)) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        await (await engine.submit("mult", [wtns("bn128", "multiplier")])).result()
        status = engine.status()
        text = engine.prometheus()
    assert status["state"] == "running" and status["counters"]["partitions_done"] == 1
    assert set(status["queues"]) == {"admission", "synthesize", "prep_msm", "gpu0", "epilogue"}
    assert status["devices"][0]["backend"] == "cpu" and 0 < status["devices"][0]["gpu_lock_busy_fraction"] < 1
    assert status["host_budget"]["capacity_bytes"] == 10**7 and status["host_budget"]["peak_bytes"] > 0
    assert "gpu_total_ms" in status["stage_medians_ms"]
    json.dumps(status)  # serialisable as is
    assert 'zkpipe_engine_partitions_total{outcome="done"} 1.0' in text
    assert 'zkpipe_engine_partitions_total{outcome="failed"} 0.0' in text  # counters exist from zero
    assert 'zkpipe_engine_jobs_total{event="submitted"} 1.0' in text
    assert "# TYPE zkpipe_engine_gpu_lock_held_seconds_total counter" in text
    assert "# TYPE zkpipe_engine_queue_depth gauge" in text
    # stage times are histograms in seconds (one observation per finished partition)
    assert "# TYPE zkpipe_engine_partition_stage_seconds histogram" in text
    assert 'zkpipe_engine_partition_stage_seconds_count{stage="gpu"} 1.0' in text
    assert 'zkpipe_engine_partition_stage_seconds_count{stage="b_g2_msm"} 0.0' in text
    assert "zkpipe_engine_partition_seconds_count 1.0" in text
    assert not [line for line in text.splitlines() if line.split("{")[0].split(" ")[0].endswith(("_ms", "_ms_total"))]


async def test_shutdown_without_drain_cancels_live_jobs_and_refuses_new_ones():
    engine = Engine(EngineConfig(**CPU))
    await engine.start()
    engine.register_key("mult", **key_files("bn128", "multiplier"))
    job = await engine.submit("mult", [wtns("bn128", "multiplier")] * 3)
    await engine.shutdown(drain=False)
    with pytest.raises(JobCancelled):
        await job.result()
    with pytest.raises(EngineNotRunning):
        await engine.submit("mult", [wtns("bn128", "multiplier")])


async def test_leaving_the_context_drains_accepted_jobs():
    async with Engine(EngineConfig(**CPU)) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        job = await engine.submit("mult", [wtns("bn128", "multiplier")] * 2)
    assert job.state is JobState.DONE and len(await job.result()) == 2


async def test_the_g2_msm_in_a_worker_process_gives_verifying_proofs():
    config = EngineConfig(**CPU, g2_msm_placement="cpu", g2_msm_executor="process", g2_msm_workers=1,
                          verify_proofs=True)
    async with Engine(config) as engine:
        engine.register_key("mult", **key_files("bn128", "multiplier"))
        proofs = await (await engine.submit("mult", [wtns("bn128", "multiplier")] * 2)).result()
    assert all(p.verified for p in proofs) and all(p.timings_ms["b_g2_msm_ms"] >= 0 for p in proofs)
