"""Arithmetic mod r over many field elements at once, in numpy (no Python int per element).

Numbers are held as 16-bit digits in uint64 rows, digit-major: shape (digits, n), row i the
digit of weight 2^(16 i) of every element, so each numpy pass reads one contiguous row. 16-bit
digits leave 32 bits of headroom above a digit product: sums of thousands of products fit
without carrying, and carries are propagated only where a digit's exact value is needed.

Reduction is Montgomery's (REDC) with R = 2^288 (18 digits): any T < r * R comes out as
T * R^-1 mod r. R is larger than r's 16 digits on purpose, so unreduced sums of up to 2^20
products of reduced values can be reduced directly. ``mul_mod`` multiplies twice (the second
time by R^2 mod r) to undo the R^-1; ``check`` compares both sides with the same power of R^-1.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

DIGIT_BITS = 16
DIGIT_MASK = np.uint64(0xFFFF)
FIELD_DIGITS = 16  # r < 2^256 on both curves
REDC_DIGITS = 18  # R = 2^(16 * 18)
SHIFT = np.uint64(DIGIT_BITS)


@lru_cache(maxsize=None)
def _constants(modulus: int) -> tuple[np.ndarray, np.uint64, np.ndarray]:
    """r as a (16, 1) digit column, -r^-1 mod 2^16, and R^2 mod r as digits."""
    r_digits = int_to_digits(modulus)
    n0 = np.uint64((-pow(modulus, -1, 1 << DIGIT_BITS)) % (1 << DIGIT_BITS))
    r2 = int_to_digits(pow(2, 2 * DIGIT_BITS * REDC_DIGITS, modulus))
    return r_digits, n0, r2


def int_to_digits(value: int) -> np.ndarray:
    return np.array([(value >> (DIGIT_BITS * i)) & 0xFFFF for i in range(FIELD_DIGITS)],
                    dtype=np.uint64).reshape(FIELD_DIGITS, 1)


def limbs_to_digits(limbs: np.ndarray) -> np.ndarray:
    """(n, limbs) uint64 little-endian (any leading shape) -> (16, n) digits."""
    flat = np.ascontiguousarray(limbs, dtype="<u8").reshape(-1, limbs.shape[-1])
    return flat.view("<u2").T.astype(np.uint64)


def digits_to_limbs(digits: np.ndarray) -> np.ndarray:
    """(16, n) normalized digits (each < 2^16) -> (n, 4) uint64 little-endian limbs."""
    return np.ascontiguousarray(digits.T.astype("<u2")).view("<u8")


def normalize(digits: np.ndarray) -> np.ndarray:
    """Propagate carries in place so that every digit but the last is < 2^16."""
    for i in range(digits.shape[0] - 1):
        digits[i + 1] += digits[i] >> SHIFT
        digits[i] &= DIGIT_MASK
    return digits


def with_headroom(digits: np.ndarray, rows: int) -> np.ndarray:
    """Copy ``digits`` into a zero array of ``rows`` digits (room for carries)."""
    out = np.zeros((rows, digits.shape[1]), dtype=np.uint64)
    out[: digits.shape[0]] = digits
    return out


def mul_wide(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Schoolbook product, digits unnormalized: (dx, n) * (dy, n) -> (dx + dy + 1, n).

    Inputs must be normalized (digits < 2^16) so every column sum stays below 2^(32 + 6).
    The extra top digit is room for REDC's carries.
    """
    out = np.zeros((x.shape[0] + y.shape[0] + 1, x.shape[1]), dtype=np.uint64)
    for i in range(x.shape[0]):
        out[i : i + y.shape[0]] += x[i] * y
    return out


def redc(t: np.ndarray, modulus: int) -> np.ndarray:
    """T * R^-1 mod r, as (16, n) normalized digits < r, for unnormalized T < r * R.

    ``t`` needs at least 18 + 16 + 1 digit rows and is overwritten.
    """
    r_digits, n0, _ = _constants(modulus)
    if t.shape[0] < REDC_DIGITS + FIELD_DIGITS + 1:
        t = with_headroom(t, REDC_DIGITS + FIELD_DIGITS + 1)
    for i in range(REDC_DIGITS):
        if i:
            t[i] += t[i - 1] >> SHIFT  # t[i - 1] is now a multiple of 2^16: carry all of it
        m = ((t[i] & DIGIT_MASK) * n0) & DIGIT_MASK
        t[i : i + FIELD_DIGITS] += m * r_digits
    t[REDC_DIGITS] += t[REDC_DIGITS - 1] >> SHIFT
    out = normalize(t[REDC_DIGITS:])  # < 2r < 2^256: the top rows end up zero
    return subtract_if_not_below(out[:FIELD_DIGITS], modulus)


def subtract_if_not_below(x: np.ndarray, modulus: int) -> np.ndarray:
    """x - r where x >= r, else x; x normalized and < 2r."""
    r_digits, _, _ = _constants(modulus)
    diff = x.astype(np.int64) - r_digits.astype(np.int64)
    for i in range(FIELD_DIGITS - 1):
        diff[i + 1] += diff[i] >> 16  # arithmetic shift: -1 carries a borrow
        diff[i] &= 0xFFFF
    keep = diff[FIELD_DIGITS - 1] < 0
    diff[FIELD_DIGITS - 1] &= 0xFFFF
    return np.where(keep, x, diff.astype(np.uint64))


def reduce_sum(digits: np.ndarray, modulus: int) -> np.ndarray:
    """(s * R^-1 mod r) for an unnormalized digit sum s < r * R."""
    return redc(with_headroom(digits, REDC_DIGITS + FIELD_DIGITS + 1), modulus)


def mul_mod(x: np.ndarray, y: np.ndarray, modulus: int) -> np.ndarray:
    """x * y mod r for normalized digit arrays with x * y < r * R (e.g. both < 2^270)."""
    _, _, r2 = _constants(modulus)
    once = redc(mul_wide(x, y), modulus)  # x y R^-1
    return redc(mul_wide(once, r2), modulus)  # x y R^-1 R^2 R^-1


def sum_of_limbs(values: np.ndarray) -> np.ndarray:
    """Exact sums of (n, t, limbs) elements over t (t < 2^16), as normalized (17, n) digits."""
    n, t = values.shape[0], values.shape[1]
    digits = np.ascontiguousarray(values, dtype="<u8").view("<u2").reshape(n, t, FIELD_DIGITS)
    out = np.zeros((FIELD_DIGITS + 1, n), dtype=np.uint64)
    out[:FIELD_DIGITS] = digits.sum(axis=1, dtype=np.uint64).T
    return normalize(out)
