"""Witnesses prefetched ahead of the GPU lock (witness_prefetch.py, CudaOptions.witness_prefetch) without a
GPU: the bookkeeping by staged array, the copy on the copy stream into a block taken in its order, the
kernels' stream waiting for the copy before it uses or frees the block, and the fallbacks (budget short,
an array the copy cannot take). The copy itself runs on the GPU (tests/gpu/test_backend.py)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.backends.cuda import witness_prefetch as wp
from pipeline.backends.cuda.errors import DeviceBudgetError
from pipeline.backends.cuda.options import CudaOptions


class Log(list):
    pass


class FakeEvent:
    def __init__(self, log: Log) -> None:
        self.log = log

    def record(self, stream):
        self.log.append(("record", stream.name))
        return self

    def close(self) -> None:
        self.log.append(("close event",))


class FakeStream(SimpleNamespace):
    def wait(self, event) -> None:
        self.log.append(("wait", self.name))


class FakeAllocator:
    def __init__(self, log: Log, budget: int) -> None:
        self.log, self.budget, self.used = log, budget, 0

    def alloc(self, nbytes, what, stream=None):
        if self.used + nbytes > self.budget:
            raise DeviceBudgetError(f"{what}: {nbytes} bytes over the budget")
        self.used += nbytes
        self.log.append(("alloc", nbytes, stream.name))
        alloc = self

        class Buf:
            ptr = 0x1000

            def free(self_inner) -> None:
                alloc.used -= nbytes
                alloc.log.append(("free", nbytes))
        return Buf()


@pytest.fixture
def setup(monkeypatch):
    log = Log()
    monkeypatch.setattr(wp, "Event", lambda timing=True: FakeEvent(log))
    monkeypatch.setattr(wp.driver, "cuMemcpyHtoDAsync",
                        lambda dst, src, n, stream: log.append(("copy", n, stream)) or (0,))
    monkeypatch.setattr(wp, "check", lambda result, call: None)
    copy = FakeStream(name="copy", handle="copy", log=log)
    main = FakeStream(name="main", handle="main", log=log)
    alloc = FakeAllocator(log, budget=1 << 20)
    alloc.stream = main  # the kernels' stream: takes, drops and frees are ordered on it
    return log, alloc, copy, main


def test_a_prefetch_is_copied_on_the_copy_stream_and_taken_once_after_a_wait(setup):
    log, alloc, copy, main = setup
    prefetches = wp.WitnessPrefetches(alloc, copy)
    witness = np.arange(16, dtype=np.uint64).reshape(4, 4)
    assert prefetches.start(witness) == 128
    assert log == [("alloc", 128, "copy"), ("copy", 128, "copy"), ("record", "copy")]
    assert prefetches.start(witness) == 0  # already held: one copy an array
    log.clear()
    d_w = prefetches.take(witness)
    assert d_w is not None and log == [("wait", "main"), ("close event",)]
    assert prefetches.take(witness) is None  # taken once
    assert prefetches.take(witness.copy()) is None  # another array (address): not this prefetch


def test_a_dropped_prefetch_is_freed_after_the_kernels_stream_waits_for_its_copy(setup):
    log, alloc, copy, main = setup
    prefetches = wp.WitnessPrefetches(alloc, copy)
    witness = np.zeros((8, 4), dtype=np.uint64)
    prefetches.start(witness)
    log.clear()
    assert prefetches.drop(witness) is True
    assert log == [("wait", "main"), ("close event",), ("free", 256)] and alloc.used == 0
    assert prefetches.drop(witness) is False


def test_no_prefetch_past_the_budget_or_of_an_array_the_copy_cannot_take(setup):
    log, alloc, copy, main = setup
    prefetches = wp.WitnessPrefetches(alloc, copy)
    assert prefetches.start(np.zeros((1 << 16, 4), dtype=np.uint64)) == 0  # 2 MiB over a 1 MiB budget
    assert prefetches.start(np.zeros((8, 8), dtype=np.uint64)[:, :4]) == 0  # not contiguous
    assert prefetches.start(np.zeros((8, 4), dtype=np.uint32)) == 0  # not 64-bit words
    assert prefetches.start(np.zeros((0, 4), dtype=np.uint64)) == 0
    assert log == [] and alloc.used == 0


def test_close_frees_every_prefetch_after_its_copy(setup):
    log, alloc, copy, main = setup
    prefetches = wp.WitnessPrefetches(alloc, copy)
    a, b = np.zeros((2, 4), dtype=np.uint64), np.zeros((3, 4), dtype=np.uint64)
    prefetches.start(a)
    prefetches.start(b)
    prefetches.close()
    assert alloc.used == 0 and prefetches.take(a) is None
    assert [e[0] for e in log[-6:]] == ["wait", "close event", "free"] * 2


def test_the_option_is_on_by_default_and_checked():
    assert CudaOptions().witness_prefetch is True
    with pytest.raises(ValueError, match="witness_prefetch"):
        CudaOptions(witness_prefetch="yes")


def test_a_second_prefetch_of_the_same_array_racing_the_first_is_given_back(setup, monkeypatch):
    """Two threads prefetching one array at once (the engine never does): the second copy's block goes
    back once the allocator's stream has waited for it, and the first stays the one held."""
    log, alloc, copy, main = setup
    prefetches = wp.WitnessPrefetches(alloc, copy)
    witness = np.zeros((4, 4), dtype=np.uint64)
    real_alloc = alloc.alloc

    def alloc_and_race(nbytes, what, stream=None):  # the other thread's prefetch lands while this one copies
        buf = real_alloc(nbytes, what, stream)
        monkeypatch.setattr(alloc, "alloc", real_alloc)
        assert prefetches.start(witness) == 128
        return buf
    monkeypatch.setattr(alloc, "alloc", alloc_and_race)
    assert prefetches.start(witness) == 0
    assert alloc.used == 128 and log[-3:] == [("wait", "main"), ("close event",), ("free", 128)]
    assert prefetches.take(witness) is not None
