// fp2_t<F>: Fq2 = Fq[u] / (u^2 + 1) over any mont_t (both curves build Fq2 with u^2 = -1).
// Element c0 + c1 u; same interface as mont_t, so point templates take either field.
#pragma once
#include "mont.cuh"

template <class F>
struct __align__(16) fp2_t {
    static constexpr int LANES = 1;
    static constexpr bool HAS_DOT = true;
    typedef fp2_t mem_t;
    F c0, c1;

    static __device__ __forceinline__ fp2_t load(const mem_t& m) { return m; }
    __device__ __forceinline__ void store(mem_t& m) const {
        c0.store(m.c0);  // canonical (a lazy F's store)
        c1.store(m.c1);
    }

    static __device__ __forceinline__ fp2_t zero() { return {F::zero(), F::zero()}; }
    static __device__ __forceinline__ fp2_t one() { return {F::one(), F::zero()}; }

    __device__ __forceinline__ bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    __device__ __forceinline__ bool is_zero_stored() const { return c0.is_zero_stored() && c1.is_zero_stored(); }
    __device__ __forceinline__ bool operator==(const fp2_t& b) const { return c0 == b.c0 && c1 == b.c1; }
    __device__ __forceinline__ bool operator!=(const fp2_t& b) const { return !(*this == b); }

    friend __device__ __forceinline__ fp2_t operator+(const fp2_t& a, const fp2_t& b) {
        return {a.c0 + b.c0, a.c1 + b.c1};
    }
    friend __device__ __forceinline__ fp2_t operator-(const fp2_t& a, const fp2_t& b) {
        return {a.c0 - b.c0, a.c1 - b.c1};
    }
    __device__ __forceinline__ fp2_t operator-() const { return {-c0, -c1}; }
    __device__ __forceinline__ fp2_t dbl() const { return *this + *this; }

    // Karatsuba, 3M: t0 = a0 b0, t1 = a1 b1; c0 = t0 - t1; c1 = (a0 + a1)(b0 + b1) - t0 - t1.
    // Not inlined: a G2 point formula holds ~15 of these, and inlining them all made one
    // BLS12-381 G2 build unit take minutes in NVRTC (bench/NOTES.md, build times).
    friend __device__ __noinline__ fp2_t operator*(const fp2_t& a, const fp2_t& b) {
        const F t0 = a.c0 * b.c0;
        const F t1 = a.c1 * b.c1;
        const F cross = (a.c0 + a.c1) * (b.c0 + b.c1);
        return {t0 - t1, cross - t0 - t1};
    }
    // a b + c d (the point formulas' Y3; mont_t and fp2_pair_t fold the sum into one reduction).
    static __device__ __forceinline__ fp2_t dot(const fp2_t& a, const fp2_t& b, const fp2_t& c, const fp2_t& d) {
        return a * b + c * d;
    }
    // complex squaring, 2M: (a0 + a1)(a0 - a1) + 2 a0 a1 u
    __device__ __noinline__ fp2_t sqr() const {
        const F t = c0 * c1;
        return {(c0 + c1) * (c0 - c1), t + t};
    }
    __device__ __forceinline__ fp2_t& operator+=(const fp2_t& b) { return *this = *this + b; }
    __device__ __forceinline__ fp2_t& operator-=(const fp2_t& b) { return *this = *this - b; }
    __device__ __forceinline__ fp2_t& operator*=(const fp2_t& b) { return *this = *this * b; }

    // 1/(a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2); zero maps to zero
    __device__ fp2_t inverse() const {
        const F norm_inv = (c0.sqr() + c1.sqr()).inverse();
        return {c0 * norm_inv, -(c1 * norm_inv)};
    }
    __device__ __forceinline__ fp2_t to_mont() const { return {c0.to_mont(), c1.to_mont()}; }
    __device__ __forceinline__ fp2_t from_mont() const { return {c0.from_mont(), c1.from_mont()}; }
};
