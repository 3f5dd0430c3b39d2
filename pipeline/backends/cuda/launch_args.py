"""A launch's kernel parameters packed into one host buffer: the driver's ``kernelParams``.

cuLaunchKernel copies the parameters before it returns, so each thread keeps one buffer and
one pointer table per signature and refills them in place. The earlier launch built a numpy
array per argument (~1 us each, 12 for an NTT pass): at 2^20 a transform is ~0.3 ms on the
device, and the host's work before its first launch is part of what a caller waits for.
"""
from __future__ import annotations

import struct
import threading

import numpy as np

PTR, U32, I32, U64 = "ptr", "u32", "i32", "u64"
FR = "fr"  # an Fr element by value: its limbs, least significant first

_SCALAR_FORMATS = {PTR: "Q", U64: "Q", U32: "I4x", I32: "i4x"}  # every slot 8-byte aligned


class ArgLayout:
    """One signature's packing: each argument in its own 8-byte aligned slot of one buffer."""

    def __init__(self, signature: tuple[str, ...], fr_bytes: int) -> None:
        fmt, offsets, offset = "<", [], 0
        for kind in signature:
            offsets.append(offset)
            if kind == FR:
                fmt += f"{fr_bytes}s" + "x" * (-fr_bytes % 8)
                offset += fr_bytes + (-fr_bytes % 8)
            elif kind in _SCALAR_FORMATS:
                fmt += _SCALAR_FORMATS[kind]
                offset += 8
            else:
                raise ValueError(f"kernel parameter type {kind!r}: one of {sorted([*_SCALAR_FORMATS, FR])}")
        self.signature = signature
        self.fr_bytes = fr_bytes
        self._struct = struct.Struct(fmt)
        self._offsets = np.array(offsets, dtype=np.uint64)
        self._local = threading.local()

    def _buffers(self) -> tuple[np.ndarray, np.ndarray, int]:
        """This thread's value buffer, its pointer table and the table's address (kept: numpy's ``ctypes.data``
        costs ~1.1 us, a third of a pack, and a launch's host time runs ahead of its kernel's start)."""
        buffers = getattr(self._local, "buffers", None)
        if buffers is None:
            values = np.zeros(max(self._struct.size, 8), dtype=np.uint8)
            params = self._offsets + np.uint64(values.ctypes.data)
            buffers = self._local.buffers = (values, params, params.ctypes.data)
        return buffers

    def pack(self, args: tuple) -> int:
        """The address of the pointer table for ``args``, valid on this thread until its next pack
        of this signature. Out-of-range integers and Fr values of the wrong size raise."""
        if len(args) != len(self.signature):
            raise TypeError(f"{len(self.signature)} arguments expected, {len(args)} given")
        packed = []
        for kind, value in zip(self.signature, args):
            if kind == FR:
                if not isinstance(value, bytes):  # bytes: limbs packed once by the caller (NttRunner._fr_arg)
                    value = np.ascontiguousarray(value, dtype=np.uint64).tobytes()
                if len(value) != self.fr_bytes:
                    raise ValueError(f"Fr argument of {len(value)} bytes, {self.fr_bytes} expected")
                packed.append(value)
            else:
                packed.append(int(value))
        values, _, address = self._buffers()
        try:
            self._struct.pack_into(values, 0, *packed)
        except struct.error as exc:
            raise OverflowError(f"kernel arguments {self.signature}: {exc}") from None
        return address
