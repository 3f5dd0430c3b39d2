"""A partition's resources are given back exactly once, however it ends."""
from __future__ import annotations

import asyncio

from pipeline.engine.budgets import ByteBudget
from pipeline.engine.resources import PartitionResources


def make(released_keys, on_release_calls, slots=None, budget=None):
    slots = slots or asyncio.Semaphore(1)
    budget = budget or ByteBudget("host", 100)
    return PartitionResources("k", 40, slots, budget, released_keys.append, lambda: on_release_calls.append(1)), \
        slots, budget


async def test_release_gives_back_slot_bytes_key_and_staging_once():
    keys, calls, given = [], [], []
    budget = ByteBudget("host", 100)
    slots = asyncio.Semaphore(1)
    await slots.acquire()
    await budget.acquire(40, "partition")
    res, _, _ = make(keys, calls, slots, budget)
    res.hold_staging("buf", given.append)
    res.release()
    res.release()  # idempotent
    assert (keys, calls, given) == (["k"], [1], ["buf"])
    assert budget.used == 0 and not slots.locked()


async def test_a_buffer_pinned_after_the_partition_left_goes_back_at_once():
    keys, calls, given = [], [], []
    res, slots, budget = make(keys, calls)
    await slots.acquire()
    await budget.acquire(40, "partition")
    res.release()
    res.hold_staging("late", given.append)
    assert given == ["late"] and keys == ["k"]


def test_start_leaving_is_true_only_once():
    res, _, _ = make([], [])
    assert res.start_leaving() is True
    assert res.start_leaving() is False and res.leaving
