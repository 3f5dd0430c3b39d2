"""The generated header of the CUDA kernels: per-curve constants from ``pipeline.curves`` and the
launch constants and test op codes of ``launch.py``.

Python is the single source of truth: nothing per curve, no block size a kernel depends on and
no op code is written by hand in ``cuda_src/``. The text below is handed to NVRTC as an
in-memory header named ``curve_params.cuh`` when a curve's kernels are built (so it is part of
each unit's cache key), and ``python -m pipeline.backends.cuda.constants bn128`` prints it.

Device limbs are 32-bit (see ``cuda_src/ff/mont.cuh`` for why); a host ``uint64`` limb array
has the same bytes, so Montgomery form with R = 2^(64*limbs) is unchanged on the device.
"""
from __future__ import annotations

import sys

from ...curves import Curve, PrimeField, curve_by_name
from .launch import launch_header

HEADER_NAME = "curve_params.cuh"


def _words(value: int, n_words: int) -> list[int]:
    if value >> (32 * n_words):
        raise ValueError(f"{value:#x} does not fit in {n_words} 32-bit words")
    return [(value >> (32 * i)) & 0xFFFFFFFF for i in range(n_words)]


def _array(name: str, value: int, n_words: int) -> str:
    body = ", ".join(f"0x{w:08x}u" for w in _words(value, n_words))
    return f"__device__ __constant__ const uint32_t {name}[{n_words}] = {{{body}}};"


def dot_terms_for(p: int, n_words: int) -> int:
    """The most terms a Montgomery dot product (mont.cuh, product<K>) may sum with one reduction: the
    largest K with (K + 1) p < R, so that every CIOS step's value fits the N + 1 words."""
    return ((1 << (32 * n_words)) - 1) // p - 1


def lazy_terms_for(p: int, n_words: int) -> int:
    """The most terms a product may sum with one reduction when its operands are kept in [0, 2p) (mont.cuh, a
    LAZY field): every CIOS step's value stays below (2K + 1) p w, which fits the N + 1 words when (2K + 1) p < R,
    and the result, below p (4 K p / R + 1), falls under 2p with at most one subtraction of p when 2 K p < R;
    sums of two such values need 4p < R. 0: the field has no room for the form (BLS12-381's Fr)."""
    r = 1 << (32 * n_words)
    if 4 * p >= r:  # the sum of two values below 2p must fit the words
        return 0
    return max(0, min(((r - 1) // p - 1) // 2, (r - 1) // (2 * p)))


def lazy_free_terms_for(p: int, n_words: int) -> int:
    """The most terms whose lazy product needs no final subtraction at all: 4 K p < R (the result, below
    p (4 K p / R + 1), is then below 2p as it comes out)."""
    return ((1 << (32 * n_words)) - 1) // (4 * p)


def m0_word(tag: str, m0: int) -> str:
    """-p^-1 mod 2^32 as mont.cuh's reduction reads it. All ones (BLS12-381's Fr, p = 1 mod 2^32) goes in a
    __constant__ word that is not const: ptxas, seeing m = -e[0], builds the reduction's rows from IMAD.X and
    IMAD.HI pairs instead of IMAD.WIDE, and the product measured 18% slower (62.6 against 53.1 Gmul/s on an
    H200, session 28; sppark's mont_t hides the same constant). Other values stay literals."""
    if m0 == 0xffffffff:
        return f"__device__ __constant__ uint32_t {tag}_M0 = 0x{m0:08x}u;  // not const: m0_word in constants.py"
    return f"constexpr uint32_t {tag}_M0 = 0x{m0:08x}u;"


def field_params(tag: str, field: PrimeField) -> str:
    """One field's constants: modulus, -p^-1 mod 2^32, R, R^2, p - 2 (for inversion by Fermat)."""
    p = field.modulus
    n_words = 2 * field.limbs
    if p.bit_length() > 32 * n_words - 1:
        raise ValueError(f"{field.name}: mont.cuh assumes p < R/2 (sums of two reduced values fit in N words)")
    m0 = (-pow(p, -1, 1 << 32)) % (1 << 32)
    r = field.r_mont
    dot_terms = dot_terms_for(p, n_words)
    lazy_terms = lazy_terms_for(p, n_words)
    return "\n".join([
        f"// {field.name}: {p.bit_length()} bits, {n_words} x 32-bit words",
        m0_word(tag, m0),
        _array(f"{tag}_MOD", p, n_words),
        _array(f"{tag}_ONE", r, n_words),
        _array(f"{tag}_RR", r * r % p, n_words),
        _array(f"{tag}_PM2", p - 2, n_words),
        _array(f"{tag}_MOD2", 2 * p, n_words) if lazy_terms else f"// no 2p words: {field.name} has no room for [0, 2p)",
        f"struct {tag.lower()}_params {{",
        f"    static constexpr int N = {n_words};",
        f"    static constexpr int BITS = {p.bit_length()};",
        f"    static __device__ __forceinline__ uint32_t m0() {{ return {tag}_M0; }}",
        f"    static constexpr int DOT_TERMS = {dot_terms};",
        "    static constexpr bool LAZY = false;  // lazy_params<> below sets it",
        f"    static constexpr int LAZY_TERMS = {lazy_terms};",
        f"    static constexpr int LAZY_FREE_TERMS = {lazy_free_terms_for(p, n_words) if lazy_terms else 0};",
        f"    static __device__ __forceinline__ uint32_t mod(int i) {{ return {tag}_MOD[i]; }}",
        f"    static __device__ __forceinline__ uint32_t one(int i) {{ return {tag}_ONE[i]; }}",
        f"    static __device__ __forceinline__ uint32_t rr(int i) {{ return {tag}_RR[i]; }}",
        f"    static __device__ __forceinline__ uint32_t pm2(int i) {{ return {tag}_PM2[i]; }}",
        (f"    static __device__ __forceinline__ uint32_t mod2(int i) {{ return {tag}_MOD2[i]; }}" if lazy_terms
         else "    static __device__ __forceinline__ uint32_t mod2(int i) { return 0; }  // never read: LAZY_TERMS = 0"),
        "};",
    ])


def curve_header(curve: Curve) -> str:
    """The whole generated header for one curve (Fr and Fq; Fq2 is u^2 = -1 on both curves), and
    the launch constants."""
    return "\n".join([
        f"// GENERATED by pipeline/backends/cuda/constants.py for {curve.name}: do not edit.",
        "#pragma once",
        f"#define ZK_CURVE_NAME \"{curve.name}\"",
        field_params("FR", curve.fr),
        field_params("FQ", curve.fq),
        launch_header(),
        "",
    ])


if __name__ == "__main__":
    print(curve_header(curve_by_name(sys.argv[1] if len(sys.argv) > 1 else "bn128")))
