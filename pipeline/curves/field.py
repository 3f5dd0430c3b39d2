"""Prime fields over Python ints: the golden model every kernel is checked against.

A field value is a plain ``int`` in [0, p). Host arrays of field elements are numpy
``uint64`` arrays of shape ``(n, limbs)``, little-endian limbs (the byte layout of the
snarkjs binary formats). Whether an array holds Montgomery form is the caller's to know:
names carry ``_mont`` where it does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def _is_probable_prime(n: int) -> bool:
    """Miller-Rabin with fixed bases: a wrong constant fails at import, not as a wrong proof."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for q in small:
        if n % q == 0:
            return n == q
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


@dataclass(frozen=True)
class PrimeField:
    """Z/pZ with the Montgomery constants of a ``limbs`` x 64-bit representation."""

    name: str
    modulus: int
    limbs: int = field(init=False)
    r_mont: int = field(init=False)  # R = 2^(64*limbs) mod p
    r_mont_inv: int = field(init=False)

    def __post_init__(self) -> None:
        if not _is_probable_prime(self.modulus):
            raise ValueError(f"{self.name}: modulus is not prime")
        limbs = (self.modulus.bit_length() + 63) // 64
        r = pow(2, 64 * limbs, self.modulus)
        object.__setattr__(self, "limbs", limbs)
        object.__setattr__(self, "r_mont", r)
        object.__setattr__(self, "r_mont_inv", pow(r, -1, self.modulus))

    @property
    def n_bytes(self) -> int:
        return 8 * self.limbs

    @property
    def bits(self) -> int:
        return self.modulus.bit_length()

    # -- scalar arithmetic ------------------------------------------------------------
    def add(self, a: int, b: int) -> int:
        return (a + b) % self.modulus

    def sub(self, a: int, b: int) -> int:
        return (a - b) % self.modulus

    def mul(self, a: int, b: int) -> int:
        return a * b % self.modulus

    def neg(self, a: int) -> int:
        return -a % self.modulus

    def inv(self, a: int) -> int:
        if a % self.modulus == 0:
            raise ZeroDivisionError(f"{self.name}: inverse of zero")
        return pow(a, -1, self.modulus)

    def to_mont(self, a: int) -> int:
        return a * self.r_mont % self.modulus

    def from_mont(self, a: int) -> int:
        return a * self.r_mont_inv % self.modulus

    # -- numpy limb arrays <-> ints -------------------------------------------------------
    def ints_from_limbs(self, arr: np.ndarray) -> list[int]:
        """(n, limbs) uint64 little-endian -> list of ints (no reduction, no form change)."""
        flat = np.ascontiguousarray(arr, dtype="<u8").reshape(-1, self.limbs)
        raw = flat.tobytes()
        nb = self.n_bytes
        return [int.from_bytes(raw[i : i + nb], "little") for i in range(0, len(raw), nb)]

    def limbs_from_ints(self, values) -> np.ndarray:
        """Iterable of ints in [0, 2^(64*limbs)) -> (n, limbs) uint64 array."""
        nb = self.n_bytes
        raw = b"".join(int(v).to_bytes(nb, "little") for v in values)
        return np.frombuffer(raw, dtype="<u8").reshape(-1, self.limbs).copy()


@dataclass(frozen=True)
class ScalarField(PrimeField):
    """The scalar field Fr, with the roots of unity of its 2-adic subgroup.

    The roots follow ffjavascript (the library under snarkjs) exactly, because snarkjs's
    zkey H points are evaluations at those roots: w[s] = nqr^t for the smallest quadratic
    non-residue nqr, and w[k-1] = w[k]^2.
    """

    two_adicity: int = field(init=False)
    nqr: int = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        p = self.modulus
        s, t = 0, p - 1
        while t % 2 == 0:
            s, t = s + 1, t // 2
        nqr = 2
        while pow(nqr, (p - 1) // 2, p) != p - 1:
            nqr += 1
        object.__setattr__(self, "two_adicity", s)
        object.__setattr__(self, "nqr", nqr)

    def root_of_unity(self, log_n: int) -> int:
        """The primitive 2^log_n-th root of unity snarkjs uses for a domain of that size."""
        if not 0 <= log_n <= self.two_adicity:
            raise ValueError(f"{self.name}: no 2^{log_n}-th root of unity (2-adicity {self.two_adicity})")
        p = self.modulus
        t = (p - 1) >> self.two_adicity
        w = pow(self.nqr, t, p)
        return pow(w, 1 << (self.two_adicity - log_n), p)
