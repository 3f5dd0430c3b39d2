"""A stand-in for a curve's kernels and the device allocator in CPU tests of the CUDA backend's host code:
every launch, allocation, memset and free recorded in order, buffers at made-up addresses."""
from __future__ import annotations

from types import SimpleNamespace


class Recorder:
    """events: ("launch", expr, args, grid, block, shared_bytes), ("alloc", what, ptr, nbytes),
    ("memset", what), ("free", what, ptr); dependent: each launch's ``dependent`` flag, in launch order."""

    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.dependent: list[bool] = []
        self._next = 0x10000

    def launch(self, expr, grid, block, args, stream, shared_bytes=0, dependent=False):
        self.events.append(("launch", expr, args, grid, block, shared_bytes))
        self.dependent.append(dependent)

    def alloc(self, nbytes, what, stream=None):
        self._next += 0x10000
        rec, ptr = self, self._next
        rec.events.append(("alloc", what, ptr, nbytes))
        return RecordedBuffer(rec, ptr, nbytes, what)


class RecordedBuffer:
    def __init__(self, rec: Recorder, ptr: int, nbytes: int, what: str) -> None:
        self._rec, self.ptr, self.nbytes, self.what = rec, ptr, nbytes, what

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def offset(self, n: int) -> int:
        return self.ptr + n

    def memset32(self, value, stream) -> None:
        self._rec.events.append(("memset", self.what))

    def free(self) -> None:
        self._rec.events.append(("free", self.what, self.ptr))


def recorded_ntt_runner(log_max: int, graph_max_log: int = -1):
    """(Recorder, NttRunner of BN254 over it): its twiddle table already there up to 2^log_max (no launches for it),
    the kernels not synchronised after each launch; ``graph_max_log`` -1: every call's launches queued as they are
    (graphs: test_ntt_graphs.py)."""
    from pipeline.backends.cuda.ntt import NttRunner
    from pipeline.curves import BN254

    rec = Recorder()
    kernels = SimpleNamespace(curve=BN254, launch=rec.launch, sync_after_launch=False)
    ntt = NttRunner(kernels, rec, SimpleNamespace(handle=0))
    ntt.d_tw, ntt.log_max = RecordedBuffer(rec, 0x777, 8, "twiddles"), log_max
    ntt.natural_graph_max_log = graph_max_log
    return rec, ntt
