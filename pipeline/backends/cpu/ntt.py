"""Number-theoretic transforms over Fr with Python ints, and snarkjs's quotient on the odd coset.

Natural-order input and output, the forward transform evaluating at w^0 .. w^(n-1) for the
root ``ScalarField.root_of_unity(log_n)`` (ffjavascript's convention).
"""
from __future__ import annotations

from ...curves.field import ScalarField


def _bit_reverse_permute(values: list[int]) -> list[int]:
    n = len(values)
    log_n = n.bit_length() - 1
    out = [0] * n
    for i, v in enumerate(values):
        out[int(format(i, f"0{log_n}b")[::-1], 2) if log_n else 0] = v
    return out


def ntt(fr: ScalarField, values: list[int], inverse: bool = False) -> list[int]:
    """Iterative radix-2 Cooley-Tukey. ``inverse`` includes the 1/n scaling."""
    n = len(values)
    if n & (n - 1) or n == 0:
        raise ValueError(f"NTT size {n} is not a power of two")
    p = fr.modulus
    log_n = n.bit_length() - 1
    omega = fr.root_of_unity(log_n)
    if inverse:
        omega = pow(omega, -1, p)
    a = _bit_reverse_permute([v % p for v in values])
    half = 1
    while half < n:
        w_step = pow(omega, n // (2 * half), p)
        twiddles = [1] * half
        for j in range(1, half):
            twiddles[j] = twiddles[j - 1] * w_step % p
        for start in range(0, n, 2 * half):
            for j in range(half):
                u = a[start + j]
                v = a[start + j + half] * twiddles[j] % p
                a[start + j] = (u + v) % p
                a[start + j + half] = (u - v) % p
        half *= 2
    if inverse:
        n_inv = pow(n, -1, p)
        a = [x * n_inv % p for x in a]
    return a


def coset_shift(fr: ScalarField, log_n: int) -> int:
    """snarkjs's coset generator: the 2n-th root of unity, so the coset is the odd 2n-th roots."""
    return fr.root_of_unity(log_n + 1)


def to_odd_coset(fr: ScalarField, evaluations: list[int]) -> list[int]:
    """Evaluations on the domain -> evaluations on the coset shift * domain (ifft, scale, fft)."""
    p = fr.modulus
    n = len(evaluations)
    coeffs = ntt(fr, evaluations, inverse=True)
    shift = coset_shift(fr, n.bit_length() - 1)
    power = 1
    for j in range(n):
        coeffs[j] = coeffs[j] * power % p
        power = power * shift % p
    return ntt(fr, coeffs)


def quotient_on_coset(fr: ScalarField, a: list[int], b: list[int], c: list[int]) -> list[int]:
    """The H scalars snarkjs feeds to its H MSM: (A*B - C) on the odd coset, no division by Z.

    snarkjs (unlike the textbook/libsnark reduction) never divides by the vanishing polynomial
    here: its zkey H points already absorb 1/Z(coset) and the odd-coset Lagrange basis.
    """
    p = fr.modulus
    a_odd, b_odd, c_odd = (to_odd_coset(fr, x) for x in (a, b, c))
    return [(x * y - z) % p for x, y, z in zip(a_odd, b_odd, c_odd)]
