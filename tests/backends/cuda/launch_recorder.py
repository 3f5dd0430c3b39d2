"""A stand-in for a curve's kernels and the device allocator in CPU tests of the CUDA backend's host code:
every launch, allocation, memset and free recorded in order, buffers at made-up addresses."""
from __future__ import annotations


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
