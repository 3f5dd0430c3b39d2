"""ntt()'s CUDA graphs without a GPU: GraphCache's order (a key queued as it is on its first call, captured on its
second, replayed after; the least recently used closed past its capacity), and NttRunner's use of it: which calls
replay, what the key tells apart, the scratch array a size's graphs share. The captured launches themselves are
checked word for word against the plain path in tests/gpu/test_ntt.py."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.backends.cuda.graphs import GraphCache
from pipeline.backends.cuda.ntt import NttRunner, natural_plan
from tests.backends.cuda.launch_recorder import Recorder, recorded_ntt_runner

DATA = 0x900000


class RecordedGraph:
    """StreamGraph's stand-in: the capture records the launches ``queue()`` makes between two marks."""
    count = 0

    def __init__(self, rec: Recorder, stream, queue) -> None:
        RecordedGraph.count += 1
        self.rec, self.id = rec, RecordedGraph.count
        rec.events.append(("capture", self.id))
        queue()
        rec.events.append(("captured", self.id))

    def launch(self, stream) -> None:
        self.rec.events.append(("graph launch", self.id))

    def close(self) -> None:
        self.rec.events.append(("graph close", self.id))


def recorded_cache(rec: Recorder, capacity: int = 16) -> GraphCache:
    return GraphCache(capacity, capture=lambda stream, queue: RecordedGraph(rec, stream, queue))


def runner(log_max: int, graph_max_log: int = 21) -> tuple[Recorder, NttRunner]:
    rec, ntt = recorded_ntt_runner(log_max, graph_max_log)
    ntt._graphs = recorded_cache(rec)
    return rec, ntt


def kinds(events) -> list[str]:
    return [e[0] for e in events]


def test_a_key_is_queued_plainly_then_captured_then_replayed():
    rec = Recorder()
    cache, queued = recorded_cache(rec), []

    def queue():
        queued.append(1)
        rec.events.append(("launch",))

    for _ in range(4):
        cache.run("k", None, queue)
    assert kinds(rec.events) == ["launch", "capture", "launch", "captured", "graph launch", "graph launch",
                                 "graph launch"]
    assert len(queued) == 2 and len(cache) == 1


def test_the_least_recently_used_graph_is_closed_past_the_capacity():
    rec = Recorder()
    cache = recorded_cache(rec, capacity=2)
    for key in ("a", "b", "a", "b", "a", "c", "c"):  # c's capture makes three: b was used least recently
        cache.run(key, None, lambda: None)
    ids = {e[1] for e in rec.events if e[0] == "capture"}
    closed = [e[1] for e in rec.events if e[0] == "graph close"]
    assert len(ids) == 3 and len(closed) == 1 and len(cache) == 2
    order = [e for e in rec.events if e[0] in ("capture", "graph launch")]
    b_id = order[[e[0] for e in order].index("capture", 2)][1]  # the second capture is b's
    assert closed == [b_id]
    cache.close()
    assert len(cache) == 0 and sorted(e[1] for e in rec.events if e[0] == "graph close") == sorted(ids)


def test_keys_asked_for_once_are_bounded():
    cache = recorded_cache(Recorder(), capacity=2)
    for i in range(100):
        cache.run(i, None, lambda: None)
    assert len(cache._seen) == 8 and len(cache) == 0


def test_a_capture_that_fails_keeps_no_graph():
    def failing_capture(stream, queue):
        raise RuntimeError("capture refused")

    cache = GraphCache(4, capture=failing_capture)
    cache.run("k", None, lambda: None)
    with pytest.raises(RuntimeError, match="capture refused"):
        cache.run("k", None, lambda: None)
    assert len(cache) == 0


@pytest.mark.parametrize("inverse", [False, True])
def test_repeated_transforms_replay_one_graph_over_a_held_scratch_array(inverse):
    rec, ntt = runner(20)
    for _ in range(4):
        ntt.ntt(DATA, 20, inverse=inverse)
    plan = natural_plan(20)
    allocs = [e for e in rec.events if e[0] == "alloc"]
    assert [(a[1], a[3]) for a in allocs] == [("ntt natural order (graphs)", (1 << 20) * ntt.elem_bytes)]
    assert not [e for e in rec.events if e[0] == "free"]  # held while the graphs are kept
    events = kinds(rec.events)
    plain = ["launch"] * len(plan)
    assert events == ["alloc", *plain, "capture", *plain, "captured", "graph launch", "graph launch", "graph launch"]
    scratch = allocs[0][2]
    launches = [e for e in rec.events if e[0] == "launch"]
    assert launches[:len(plan)] == launches[len(plan):]  # the captured launches are the plain call's
    for i, (_, expr, args, *_) in enumerate(launches[:len(plan)]):
        last = i == len(plan) - 1
        assert args[0] == (scratch if last else DATA) and args[1] == (scratch if i == len(plan) - 2 else DATA)
        assert args[11] == int(last and inverse)
    ntt.close()
    assert ("free", "ntt natural order (graphs)", scratch) in rec.events
    assert ("graph close", rec.events[events.index("capture")][1]) in rec.events


def test_the_key_tells_buffers_directions_tables_and_settings_apart():
    rec, ntt = runner(21)
    calls = [(DATA, 20, False), (DATA + 0x100000, 20, False), (DATA, 20, True), (DATA, 21, False)]
    for _ in range(3):
        for d, log_n, inverse in calls:
            ntt.ntt(d, log_n, inverse=inverse)
    assert len(ntt._graphs) == 4 and kinds(rec.events).count("capture") == 4
    assert [e[1] for e in rec.events if e[0] == "alloc"] == ["ntt natural order (graphs)"] * 2  # one per size
    before = kinds(rec.events).count("capture")
    ntt.natural_rev_rows_log = None  # another plan: another key (twice: plain, then captured)
    ntt.ntt(DATA, 20)
    ntt.ntt(DATA, 20)
    ntt.natural_radix = 1
    ntt.ntt(DATA, 20)
    ntt.ntt(DATA, 20)
    assert kinds(rec.events).count("capture") == before + 2


def test_a_new_twiddle_table_closes_the_graphs():
    rec, ntt = runner(20)
    rec.upload = lambda array, what, stream=None: rec.alloc(array.nbytes, what)
    ntt.stream = SimpleNamespace(handle=0, synchronize=lambda: None)
    ntt.ntt(DATA, 20)
    ntt.ntt(DATA, 20)
    assert len(ntt._graphs) == 1
    ntt.ensure_twiddles(22)  # a larger table at another address: the graphs read the old one
    assert len(ntt._graphs) == 0 and kinds(rec.events)[-2:] == ["graph close", "free"]
    ntt.ntt(DATA, 20)
    assert kinds(rec.events).count("capture") == 1  # the next call queues plainly again, with the new table
    assert [e for e in rec.events if e[0] == "launch"][-1][2][2] == ntt.d_tw.ptr


@pytest.mark.parametrize("setting", ["above the largest size", "off", "synchronised launches"])
def test_without_graphs_every_call_queues_its_launches(setting):
    rec, ntt = runner(22, graph_max_log=20)
    log_n = 21 if setting == "above the largest size" else 20
    if setting == "off":
        ntt.natural_graph_max_log = -1
    if setting == "synchronised launches":
        ntt.kernels.sync_after_launch = True  # a graph cannot hold the syncs that name a faulting kernel
    for _ in range(3):
        ntt.ntt(DATA, log_n)
    assert "capture" not in kinds(rec.events) and len(ntt._graphs) == 0
    assert [e[1] for e in rec.events if e[0] == "alloc"] == ["ntt natural order"] * 3  # a scratch array per call


def test_one_pass_and_in_place_plans_hold_no_scratch_array():
    rec, ntt = runner(21)
    for _ in range(3):
        ntt.ntt(DATA, 8)  # one pass: one block, in place
    ntt.natural_in_place = True
    for _ in range(3):
        ntt.ntt(DATA, 20)
    assert [e for e in rec.events if e[0] == "alloc"] == [] and len(ntt._graphs) == 2
    assert kinds(rec.events)[-2:] == ["graph launch", "graph launch"]
