"""Pippenger bucket MSM over Python ints, for any ``CurveGroup`` (G1 or G2).

Reference, not speed: unsigned windows, zero scalars skipped, scalars equal to one summed
directly (bit-heavy witnesses make most of the MSM plain additions).
"""
from __future__ import annotations

from ...curves.points import CurveGroup


def window_bits(n: int) -> int:
    """Window width minimizing about (bits/c) * (n + 2^(c+1)) additions."""
    if n < 32:
        return 2
    return max(2, (n.bit_length() - 1) - 2)


def msm(group: CurveGroup, points: list, scalars: list[int]) -> tuple:
    """sum scalars[i] * points[i]; points affine (or None), scalars in [0, r)."""
    if len(points) != len(scalars):
        raise ValueError(f"msm: {len(points)} points but {len(scalars)} scalars")
    ones = group.infinity
    rest = []
    for pt, k in zip(points, scalars):
        if pt is None or k == 0:
            continue
        if k == 1:
            ones = group.add_affine(ones, pt)
        else:
            rest.append((pt, k))
    if not rest:
        return ones
    c = window_bits(len(rest))
    mask = (1 << c) - 1
    n_windows = (group.order.bit_length() + c - 1) // c
    total = group.infinity
    for w in reversed(range(n_windows)):
        for _ in range(c):
            total = group.double(total)
        buckets = [group.infinity] * (mask + 1)
        shift = w * c
        for pt, k in rest:
            digit = (k >> shift) & mask
            if digit:
                buckets[digit] = group.add_affine(buckets[digit], pt)
        # sum_d d * bucket[d] by a running sum from the top bucket down
        running, window_sum = group.infinity, group.infinity
        for d in range(mask, 0, -1):
            running = group.add(running, buckets[d])
            window_sum = group.add(window_sum, running)
        total = group.add(total, window_sum)
    return group.add(total, ones)
