"""The staged upload's ordering (pipeline_pieces) on the CPU: every byte arrives once and in
place, a pinned slot is never refilled before its copy has completed, and a failed fill leaves no
copy in flight. (The CUDA side: tests/gpu/test_key_cache.py loads keys through it.)"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pipeline.backends.cuda.staged_upload import pipeline_pieces


class FakeDevice:
    """Slots are host buffers; ``send`` is an in-flight copy until ``wait`` completes it."""

    def __init__(self, src: np.ndarray, slots: int, piece: int) -> None:
        self.src, self.dst = src, np.zeros_like(src)
        self.slots = [np.zeros(piece, np.uint8) for _ in range(slots)]
        self.in_flight: dict[int, tuple[int, int]] = {}
        self.sent: list[int] = []
        self.lock = threading.Lock()

    def fill(self, slot: int, a: int, b: int) -> None:
        with self.lock:
            assert slot not in self.in_flight, f"slot {slot} refilled while its copy is in flight"
        self.slots[slot][: b - a] = self.src[a:b]

    def send(self, slot: int, a: int, b: int) -> None:
        with self.lock:
            assert slot not in self.in_flight
            self.in_flight[slot] = (a, b)
        self.sent.append(a)

    def wait(self, slot: int) -> None:
        with self.lock:
            a, b = self.in_flight.pop(slot, (0, 0))
        self.dst[a:b] = self.slots[slot][: b - a]  # the copy completes: the slot's bytes are read now


@pytest.mark.parametrize("total, piece, slots", [(0, 8, 3), (5, 8, 3), (64, 8, 3), (67, 8, 3), (100, 7, 1),
                                                 (1000, 16, 8)])
def test_every_byte_arrives_once_in_order_and_no_slot_is_refilled_early(total, piece, slots):
    src = np.random.default_rng(total).integers(0, 256, total, dtype=np.uint8)
    device = FakeDevice(src, slots, piece)
    with ThreadPoolExecutor(4) as pool:
        pipeline_pieces(total, piece, slots, pool, device.fill, device.send, device.wait)
    assert np.array_equal(device.dst, src)
    assert device.sent == list(range(0, total, piece)) and device.in_flight == {}


def test_a_failed_fill_raises_after_every_copy_has_completed():
    src = np.arange(100, dtype=np.uint8)
    device = FakeDevice(src, 3, 10)

    def fill(slot, a, b):
        if a == 50:
            raise OSError("disk gone")
        device.fill(slot, a, b)

    with ThreadPoolExecutor(4) as pool, pytest.raises(OSError, match="disk gone"):
        pipeline_pieces(100, 10, 3, pool, fill, device.send, device.wait)
    assert device.in_flight == {}  # nothing left reading a pinned buffer that is about to be freed
    assert np.array_equal(device.dst[:50], src[:50])
