"""An MSM's scalars from host memory copied in pieces, each counted as it arrives (msm.scalar_pieces,
MsmRunner._count_digits), without a GPU: the pieces, and the order of copies, events, waits and count
launches recorded. The sums themselves are checked on the GPU (tests/gpu/test_msm.py,
test_scalars_from_the_host_in_pieces_match_the_reference)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.backends.cuda import msm as msm_module
from pipeline.backends.cuda.launch import SCALAR_PIECE_MIN, SCALAR_PIECES
from pipeline.backends.cuda.msm import SCALAR_BYTES, MsmRunner, host_scalars_address, scalar_pieces
from pipeline.curves import BLS12_381
from tests.backends.cuda.launch_recorder import Recorder


@pytest.mark.parametrize("n", [1, 999, 1 << 20, (1 << 21) - 1, 1 << 21, 3 << 20, 1 << 24, (1 << 24) + 5, 1 << 27])
def test_pieces_cover_the_scalars_in_order_within_the_bounds(n):
    pieces = scalar_pieces(n)
    assert pieces[0][0] == 0 and sum(count for _, count in pieces) == n
    assert all(a + ca == b for (a, ca), (b, _) in zip(pieces, pieces[1:]))  # contiguous, in order
    assert len(pieces) <= SCALAR_PIECES
    if n < 2 * SCALAR_PIECE_MIN:
        assert pieces == [(0, n)]
    else:
        assert min(count for _, count in pieces) >= SCALAR_PIECE_MIN
    if n == 1 << 24:
        assert pieces == [(k << 20, 1 << 20) for k in range(16)]


def test_host_scalars_must_be_one_contiguous_array_of_their_bytes():
    words = np.zeros((10, 8), dtype=np.uint32)
    assert host_scalars_address(words, 10) == words.ctypes.data
    assert host_scalars_address(words.view(np.uint64), 10) == words.ctypes.data
    with pytest.raises(ValueError, match="10 scalars need .* 320 bytes, got 288"):
        host_scalars_address(words[:9], 10)
    with pytest.raises(ValueError, match="not contiguous"):
        host_scalars_address(np.zeros((20, 8), dtype=np.uint32)[::2], 10)


class Streams:
    """Streams, events and copies recorded into the launch recorder's events, in order."""

    def __init__(self, rec: Recorder, monkeypatch) -> None:
        self.rec = rec
        self.main = self.stream("main")
        self.copies = self.stream("copies")
        streams = self

        class FakeEvent:
            count = 0

            def __init__(self, timing: bool = True) -> None:
                FakeEvent.count += 1
                self.name = f"e{FakeEvent.count}"

            def record(self, stream):
                streams.rec.events.append(("record", self.name, stream.name))
                return self

            def close(self):
                streams.rec.events.append(("close", self.name))

        def copy(dst, src, nbytes, handle):
            streams.rec.events.append(("copy", dst, src, nbytes, handle))
            return (0,)

        monkeypatch.setattr(msm_module, "Event", FakeEvent)
        monkeypatch.setattr(msm_module, "driver", SimpleNamespace(cuMemcpyHtoDAsync=copy))
        monkeypatch.setattr(msm_module, "check", lambda result, call: result)

    def stream(self, name: str):
        rec = self.rec
        return SimpleNamespace(name=name, handle=name,
                               wait=lambda event: rec.events.append(("wait", name, event.name)))


@pytest.fixture
def runner(monkeypatch):
    rec = Recorder()
    msm = MsmRunner(SimpleNamespace(curve=BLS12_381, launch=rec.launch), rec, None)
    streams = Streams(rec, monkeypatch)
    msm.stream, msm.copy_stream = streams.main, streams.copies
    return rec, msm


class _Any:
    def __eq__(self, other) -> bool:
        return True


ANY = _Any()  # the counts' buffer: allocated inside sort


def counts_and_copies(rec) -> list[tuple]:
    return [e for e in rec.events if e[0] in ("copy", "record", "wait", "close")
            or (e[0] == "launch" and e[1] == "msm_count_digits")]


def test_each_piece_is_counted_on_the_runners_stream_after_its_copy_has_arrived(runner):
    rec, msm = runner
    msm.scalar_pieces, msm.scalar_piece_min = 3, 100
    n, d_s = 1000, 0xA0000
    host = np.zeros((n, 8), dtype=np.uint32)
    src = host.ctypes.data
    msm.sort(d_s, n, h_scalars=host)
    ranks = next(e[2] for e in rec.events if e[0] == "alloc" and e[1] == "msm digit ranks")
    plan = msm.plan(n, False)
    seen = counts_and_copies(rec)
    # the copies start after what the runner's stream queued before (a reader of d_s may still run)
    assert seen[:2] == [("record", "e1", "main"), ("wait", "copies", "e1")]
    expected = []
    for k, (first, count) in enumerate([(0, 333), (333, 333), (666, 334)]):
        at = first * SCALAR_BYTES
        expected += [("copy", d_s + at, src + at, count * SCALAR_BYTES, "copies"),
                     ("record", f"e{k + 2}", "copies"), ("wait", "main", f"e{k + 2}"),
                     ("launch", "msm_count_digits",
                      (d_s + at, count, plan.c, plan.n_windows, ANY, ranks + 4 * first, 0, n))]
    assert [e[:3] if e[0] == "launch" else e for e in seen[2:2 + len(expected)]] == expected
    assert sorted(e[1] for e in seen if e[0] == "close") == ["e1", "e2", "e3", "e4"]
    # the scatter comes after the last count, on the runner's stream: it reads every scalar
    order = [e[1] for e in rec.events if e[0] == "launch"]
    assert order.index("msm_scatter_digits") > max(i for i, name in enumerate(order) if name == "msm_count_digits")


@pytest.mark.parametrize("why", ["one piece", "no copy stream", "a single piece asked for"])
def test_scalars_copied_whole_go_on_the_runners_stream_before_one_count(runner, why):
    rec, msm = runner
    n = 1000
    msm.scalar_piece_min = 100
    if why == "one piece":
        n = 150
    elif why == "no copy stream":
        msm.copy_stream = None
    else:
        msm.scalar_pieces = 1
    host = np.zeros((n, 8), dtype=np.uint32)
    msm.sort(0xA0000, n, h_scalars=host)
    seen = counts_and_copies(rec)
    assert [e[0] for e in seen] == ["copy", "launch"]
    assert seen[0] == ("copy", 0xA0000, host.ctypes.data, n * SCALAR_BYTES, "main")
    assert seen[1][2][:2] == (0xA0000, n) and seen[1][2][-1] == n


def test_scalars_on_the_device_are_counted_once_with_no_copy(runner):
    rec, msm = runner
    msm.scalar_piece_min = 100
    msm.sort(0xA0000, 1000)
    seen = counts_and_copies(rec)
    assert [e[0] for e in seen] == ["launch"] and seen[0][2][1] == 1000 and seen[0][2][-1] == 1000


def test_a_failed_count_leaves_the_runners_stream_waiting_for_every_copy(runner):
    """The caller frees the device scalars in the runner's stream order: a copy still queued on the copy
    stream must come first."""
    rec, msm = runner
    msm.scalar_pieces, msm.scalar_piece_min = 4, 100
    launch = msm.kernels.launch

    def failing(expr, *args, **kwargs):
        if expr == "msm_count_digits" and sum(e[0] == "copy" for e in rec.events) == 2:
            raise RuntimeError("launch failed")
        return launch(expr, *args, **kwargs)
    msm.kernels.launch = failing
    with pytest.raises(RuntimeError, match="launch failed"):
        msm.sort(0xA0000, 1000, h_scalars=np.zeros((1000, 8), dtype=np.uint32))
    seen = counts_and_copies(rec)
    assert sum(e[0] == "copy" for e in seen) == 2
    last_record = max(i for i, e in enumerate(seen) if e[:3] == ("record", e[1], "copies"))
    tail = seen[last_record][1]
    assert ("wait", "main", tail) in seen[last_record:]
    assert {e[1] for e in seen if e[0] == "close"} == {e[1] for e in seen if e[0] == "record"}  # none leaks
    freed = {e[1] for e in rec.events if e[0] == "free"}
    assert "msm bucket offsets" in freed  # sort frees what it took


def test_host_scalars_with_digits_sorted_already_are_refused(runner):
    rec, msm = runner
    digits = msm.sort(0xA0000, 1000)
    with pytest.raises(ValueError, match="digits sorted already"):
        msm.enqueue(False, 0xB0000, 0xA0000, 1000, 0xC0000, digits=digits,
                    h_scalars=np.zeros((1000, 8), dtype=np.uint32))
