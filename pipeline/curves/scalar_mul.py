"""Faster scalar multiplication for the proof's epilogue, over any ``CurveGroup``.

The blinding terms of every proof of one key multiply the same points (δ1 in G1, δ2 in G2) by
fresh scalars, and two more terms multiply varying points. ``FixedBaseTable`` keeps, per
window i and digit j, the affine point j·2^(w·i)·P, so k·P is one mixed addition per window
(no doublings); ``mul_sum2`` computes a·P + b·Q with one shared run of doublings (Straus,
2-bit joint digits). ``CurveGroup.mul`` stays the plain reference they are tested against.
Not constant time, like the rest of the Python model.
"""
from __future__ import annotations

from .points import CurveGroup


def batch_to_affine(group: CurveGroup, points: list[tuple]) -> list[tuple]:
    """Affine forms of Jacobian points, none at infinity, with one field inversion in all."""
    f = group.ops
    prefix = [f.one]
    for _, _, z in points:
        prefix.append(f.mul(prefix[-1], z))
    inv = f.inv(prefix[-1])
    out: list[tuple] = [()] * len(points)
    for i in range(len(points) - 1, -1, -1):
        x, y, z = points[i]
        zinv = f.mul(inv, prefix[i])  # 1/z_i
        inv = f.mul(inv, z)
        zinv2 = f.sqr(zinv)
        out[i] = (f.mul(x, zinv2), f.mul(y, f.mul(zinv2, zinv)))
    return out


class FixedBaseTable:
    """k·P for a point P known in advance: ceil(bits / window) mixed additions per product."""

    def __init__(self, group: CurveGroup, point_affine: tuple, scalar_bits: int, window: int = 6) -> None:
        if point_affine is None:
            raise ValueError("a fixed-base table needs a point other than infinity")
        self.group, self.window, self.order = group, window, group.order
        self.n_windows = -(-scalar_bits // window)
        jacobian: list[tuple] = []
        base = group.from_affine(point_affine)
        for _ in range(self.n_windows):
            multiple = base
            for _ in range((1 << window) - 1):  # base, 2 base, ..., (2^w - 1) base
                jacobian.append(multiple)
                multiple = group.add(multiple, base)
            base = multiple  # 2^w base: the next window's unit
        flat = batch_to_affine(group, jacobian)
        per = (1 << window) - 1
        self._rows = [flat[i * per:(i + 1) * per] for i in range(self.n_windows)]

    def mul(self, k: int) -> tuple:
        """k·P as a Jacobian point, for any integer k (reduced modulo the group order)."""
        k %= self.order
        g, mask, acc = self.group, (1 << self.window) - 1, self.group.infinity
        for row in self._rows:
            digit = k & mask
            if digit:
                acc = g.add_affine(acc, row[digit - 1])
            k >>= self.window
        return acc


def mul_sum2(group: CurveGroup, p: tuple, a: int, q: tuple, b: int) -> tuple:
    """a·P + b·Q (Jacobian in, Jacobian out) with the doublings shared: Straus, 2-bit digits."""
    a %= group.order
    b %= group.order
    g = group
    p2, q2 = g.double(p), g.double(q)
    singles_p = (g.infinity, p, p2, g.add(p2, p))
    singles_q = (g.infinity, q, q2, g.add(q2, q))
    table = [[g.add(singles_p[i], singles_q[j]) for j in range(4)] for i in range(4)]
    acc = g.infinity
    for shift in range(2 * ((max(a.bit_length(), b.bit_length()) + 1) // 2) - 2, -1, -2):
        acc = g.double(g.double(acc))
        i, j = (a >> shift) & 3, (b >> shift) & 3
        if i or j:
            acc = g.add(acc, table[i][j])
    return acc
