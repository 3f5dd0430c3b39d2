"""Short Weierstrass points y^2 = x^3 + b in Jacobian coordinates, over any ``FqOps``/``Fq2Ops``.

Affine points are ``(x, y)`` tuples or ``None`` for the point at infinity. Jacobian points are
``(X, Y, Z)`` with x = X/Z^2, y = Y/Z^3; infinity has Z = 0. Formulas cite the EFD
(https://hyperelliptic.org/EFD/g1p/auto-shortw-jacobian-0.html), a = 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CurveGroup:
    """One group (G1 or G2) of a pairing-friendly curve."""

    name: str
    ops: Any  # FqOps or Fq2Ops
    b: Any  # curve coefficient in the coordinate field
    generator: tuple  # affine
    order: int  # prime order r of the subgroup
    cofactor: int

    # -- representation -----------------------------------------------------------------
    @property
    def infinity(self) -> tuple:
        f = self.ops
        return (f.one, f.one, f.zero)

    def from_affine(self, pt) -> tuple:
        if pt is None:
            return self.infinity
        return (pt[0], pt[1], self.ops.one)

    def to_affine(self, jac) -> tuple | None:
        f = self.ops
        x, y, z = jac
        if f.is_zero(z):
            return None
        zinv = f.inv(z)
        zinv2 = f.sqr(zinv)
        return (f.mul(x, zinv2), f.mul(y, f.mul(zinv2, zinv)))

    def is_on_curve(self, pt) -> bool:
        if pt is None:
            return True
        f = self.ops
        x, y = pt
        return f.sqr(y) == f.add(f.mul(f.sqr(x), x), self.b)

    def is_in_subgroup(self, pt) -> bool:
        return self.is_on_curve(pt) and self.to_affine(self.mul(self.from_affine(pt), self.order)) is None

    def eq(self, p1, p2) -> bool:
        """Equality of Jacobian points (cross-multiplied, no inversion)."""
        f = self.ops
        z1_inf, z2_inf = f.is_zero(p1[2]), f.is_zero(p2[2])
        if z1_inf or z2_inf:
            return z1_inf and z2_inf
        z1z1, z2z2 = f.sqr(p1[2]), f.sqr(p2[2])
        if f.mul(p1[0], z2z2) != f.mul(p2[0], z1z1):
            return False
        return f.mul(p1[1], f.mul(z2z2, p2[2])) == f.mul(p2[1], f.mul(z1z1, p1[2]))

    # -- group law ------------------------------------------------------------------------
    def neg(self, p1) -> tuple:
        return (p1[0], self.ops.neg(p1[1]), p1[2])

    def double(self, p1) -> tuple:
        """dbl-2009-l: 2M + 5S."""
        f = self.ops
        x1, y1, z1 = p1
        if f.is_zero(z1) or f.is_zero(y1):  # y = 0 only at 2-torsion: none in prime order groups
            return self.infinity
        a = f.sqr(x1)
        b = f.sqr(y1)
        c = f.sqr(b)
        d = f.sub(f.sqr(f.add(x1, b)), f.add(a, c))
        d = f.add(d, d)
        e = f.add(f.add(a, a), a)
        ff = f.sqr(e)
        x3 = f.sub(ff, f.add(d, d))
        c8 = f.add(c, c)
        c8 = f.add(c8, c8)
        c8 = f.add(c8, c8)
        y3 = f.sub(f.mul(e, f.sub(d, x3)), c8)
        z3 = f.mul(y1, z1)
        z3 = f.add(z3, z3)
        return (x3, y3, z3)

    def add(self, p1, p2) -> tuple:
        """add-2007-bl: 11M + 5S; falls back to doubling for equal inputs."""
        f = self.ops
        x1, y1, z1 = p1
        x2, y2, z2 = p2
        if f.is_zero(z1):
            return p2
        if f.is_zero(z2):
            return p1
        z1z1 = f.sqr(z1)
        z2z2 = f.sqr(z2)
        u1 = f.mul(x1, z2z2)
        u2 = f.mul(x2, z1z1)
        s1 = f.mul(y1, f.mul(z2, z2z2))
        s2 = f.mul(y2, f.mul(z1, z1z1))
        h = f.sub(u2, u1)
        rr = f.sub(s2, s1)
        if f.is_zero(h):
            return self.double(p1) if f.is_zero(rr) else self.infinity
        i = f.sqr(f.add(h, h))
        j = f.mul(h, i)
        rr = f.add(rr, rr)
        v = f.mul(u1, i)
        x3 = f.sub(f.sub(f.sqr(rr), j), f.add(v, v))
        s1j = f.mul(s1, j)
        y3 = f.sub(f.mul(rr, f.sub(v, x3)), f.add(s1j, s1j))
        z3 = f.mul(f.sub(f.sqr(f.add(z1, z2)), f.add(z1z1, z2z2)), h)
        return (x3, y3, z3)

    def add_affine(self, p1, q) -> tuple:
        """madd-2007-bl (Z2 = 1): 7M + 4S. ``q`` is affine (x, y), never infinity."""
        f = self.ops
        x1, y1, z1 = p1
        if f.is_zero(z1):
            return (q[0], q[1], f.one)
        z1z1 = f.sqr(z1)
        u2 = f.mul(q[0], z1z1)
        s2 = f.mul(q[1], f.mul(z1, z1z1))
        h = f.sub(u2, x1)
        rr = f.sub(s2, y1)
        if f.is_zero(h):
            return self.double(p1) if f.is_zero(rr) else self.infinity
        hh = f.sqr(h)
        i = f.add(hh, hh)
        i = f.add(i, i)
        j = f.mul(h, i)
        rr = f.add(rr, rr)
        v = f.mul(x1, i)
        x3 = f.sub(f.sub(f.sqr(rr), j), f.add(v, v))
        y1j = f.mul(y1, j)
        y3 = f.sub(f.mul(rr, f.sub(v, x3)), f.add(y1j, y1j))
        z3 = f.sub(f.sub(f.sqr(f.add(z1, h)), z1z1), hh)
        return (x3, y3, z3)

    def mul(self, p1, k: int) -> tuple:
        """Double-and-add, most significant bit first (reference only: not constant time)."""
        acc = self.infinity
        if k < 0:
            p1, k = self.neg(p1), -k
        for bit in bin(k)[2:]:
            acc = self.double(acc)
            if bit == "1":
                acc = self.add(acc, p1)
        return acc
