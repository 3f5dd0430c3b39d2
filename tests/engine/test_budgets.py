"""ByteBudget: waits instead of failing, FIFO, refuses the impossible, survives cancellation."""
from __future__ import annotations

import asyncio

import pytest

from pipeline.engine.budgets import BudgetTooSmall, ByteBudget


async def test_acquire_waits_until_bytes_are_released():
    budget = ByteBudget("test", 100)
    await budget.acquire(80)
    waiter = asyncio.create_task(budget.acquire(50))
    await asyncio.sleep(0)  # one loop iteration: the task runs up to its wait
    assert not waiter.done() and budget.waiting == 1
    budget.release(80)
    await asyncio.wait_for(waiter, 1)
    assert budget.used == 50 and budget.peak == 80


async def test_waiters_are_served_in_arrival_order():
    budget = ByteBudget("test", 100)
    await budget.acquire(100)
    order = []

    async def take(n, tag):
        await budget.acquire(n)
        order.append(tag)

    big = asyncio.create_task(take(90, "big"))
    await asyncio.sleep(0)
    small = asyncio.create_task(take(10, "small"))
    await asyncio.sleep(0)
    assert order == []  # the small one does not overtake the big one
    budget.release(100)
    await asyncio.gather(big, small)
    assert order == ["big", "small"]


async def test_a_request_larger_than_the_budget_fails_at_once():
    with pytest.raises(BudgetTooSmall, match="needs 101 bytes"):
        await ByteBudget("test", 100).acquire(101)


async def test_a_cancelled_waiter_takes_nothing_and_lets_others_through():
    budget = ByteBudget("test", 100)
    await budget.acquire(100)
    first = asyncio.create_task(budget.acquire(60))
    second = asyncio.create_task(budget.acquire(40))
    await asyncio.sleep(0)
    assert budget.waiting == 2
    first.cancel()
    budget.release(50)
    await asyncio.wait_for(second, 1)
    assert budget.used == 90
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_unbounded_budget_counts_without_waiting():
    budget = ByteBudget("test", None)
    await budget.acquire(10**12)
    assert budget.used == 10**12
    with pytest.raises(RuntimeError, match="releasing"):
        budget.release(10**13)
