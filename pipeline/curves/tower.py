"""Field-operation objects for the coordinates of G1 (Fq) and G2 (Fq2 = Fq[u]/(u^2+1)).

Both curves here build Fq2 with u^2 = -1. The point formulas in ``points.py`` are written
once against this small interface (add, sub, mul, sqr, neg, inv, zero, one) and bound to
either field, the py_ecc way: one algorithm, two coordinate fields.
"""
from __future__ import annotations

from dataclasses import dataclass

Fq2Value = tuple[int, int]  # c0 + c1*u


@dataclass(frozen=True)
class FqOps:
    p: int
    degree = 1

    @property
    def zero(self) -> int:
        return 0

    @property
    def one(self) -> int:
        return 1

    def add(self, a: int, b: int) -> int:
        return (a + b) % self.p

    def sub(self, a: int, b: int) -> int:
        return (a - b) % self.p

    def mul(self, a: int, b: int) -> int:
        return a * b % self.p

    def sqr(self, a: int) -> int:
        return a * a % self.p

    def neg(self, a: int) -> int:
        return -a % self.p

    def inv(self, a: int) -> int:
        return pow(a, -1, self.p)

    def is_zero(self, a: int) -> bool:
        return a == 0

    def coerce(self, a) -> int:
        return int(a) % self.p


@dataclass(frozen=True)
class Fq2Ops:
    p: int
    degree = 2

    @property
    def zero(self) -> Fq2Value:
        return (0, 0)

    @property
    def one(self) -> Fq2Value:
        return (1, 0)

    def add(self, a: Fq2Value, b: Fq2Value) -> Fq2Value:
        p = self.p
        return ((a[0] + b[0]) % p, (a[1] + b[1]) % p)

    def sub(self, a: Fq2Value, b: Fq2Value) -> Fq2Value:
        p = self.p
        return ((a[0] - b[0]) % p, (a[1] - b[1]) % p)

    def mul(self, a: Fq2Value, b: Fq2Value) -> Fq2Value:
        # Karatsuba: 3 base multiplications; u^2 = -1.
        p = self.p
        t0, t1 = a[0] * b[0], a[1] * b[1]
        cross = (a[0] + a[1]) * (b[0] + b[1])
        return ((t0 - t1) % p, (cross - t0 - t1) % p)

    def sqr(self, a: Fq2Value) -> Fq2Value:
        # (a0 + a1 u)^2 = (a0+a1)(a0-a1) + 2 a0 a1 u
        p = self.p
        return ((a[0] + a[1]) * (a[0] - a[1]) % p, 2 * a[0] * a[1] % p)

    def neg(self, a: Fq2Value) -> Fq2Value:
        p = self.p
        return (-a[0] % p, -a[1] % p)

    def inv(self, a: Fq2Value) -> Fq2Value:
        # 1/(a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2)
        p = self.p
        norm_inv = pow(a[0] * a[0] + a[1] * a[1], -1, p)
        return (a[0] * norm_inv % p, -a[1] * norm_inv % p)

    def is_zero(self, a: Fq2Value) -> bool:
        return a[0] == 0 and a[1] == 0

    def coerce(self, a) -> Fq2Value:
        return (int(a[0]) % self.p, int(a[1]) % self.p)
