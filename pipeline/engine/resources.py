"""What one admitted partition holds, and its one idempotent release.

From admission until it leaves the pipeline a partition holds a slot of
``max_partitions_in_flight``, its bytes of the host-memory budget and a reference to its key; from
prep_msm on, possibly a pinned staging buffer. ``release`` gives all of them back exactly once,
however the partition ends (finished, failed, cancelled, or dropped while its host G2 MSM still
runs: the pipeline then releases when that MSM ends, since it still reads the staged scalars).
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable

from .budgets import ByteBudget


class PartitionResources:
    def __init__(self, key_id: str, host_bytes: int, slots: asyncio.Semaphore, host_budget: ByteBudget,
                 release_key: Callable[[str], None], on_release: Callable[[], None]) -> None:
        self.key_id = key_id
        self.host_bytes = host_bytes  # reserved from the host budget until the partition leaves
        self._slots = slots
        self._host_budget = host_budget
        self._release_key = release_key
        self._on_release = on_release
        self._staging: tuple[Any, Callable[[Any], None]] | None = None
        self.leaving = False  # set once, when the partition starts to leave
        self.released = False

    def hold_staging(self, buffer: Any, give_back: Callable[[Any], None]) -> None:
        """The partition now holds ``buffer`` (given back with ``give_back`` at release)."""
        if self.released:  # left while the buffer was being pinned: return it at once
            give_back(buffer)
            return
        self._staging = (buffer, give_back)

    def start_leaving(self) -> bool:
        """True the first time only: the caller then arranges the one ``release``."""
        if self.leaving:
            return False
        self.leaving = True
        return True

    def release(self) -> None:
        """Give back the staging buffer, the host bytes, the key reference and the slot; idempotent."""
        if self.released:
            return
        self.released = True
        if self._staging is not None:
            buffer, give_back = self._staging
            self._staging = None
            give_back(buffer)
        self._host_budget.release(self.host_bytes)
        self._release_key(self.key_id)
        self._slots.release()
        self._on_release()
