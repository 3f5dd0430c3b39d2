// fp2_pair_t<F>: an Fq2 element held by two adjacent lanes of a warp, c0 on the even lane and
// c1 on the odd one (threadIdx.x & 1; blocks have an even width). Same interface as fp2_t, so
// the point templates and the MSM kernels take it unchanged; a kernel over it runs two threads
// per item (F::LANES) and reads and writes memory in fp2_t's layout (load / store).
//
// Why: an XYZZ G2 bucket held by one thread is 4 Fq2 = 96 words plus the affine point and the
// Karatsuba temporaries; the G2 bucket kernel ran at 236 registers with a 1.5 KB stack frame and
// 2 blocks of 128 threads an SM, 4.1x the G1 kernel's time a mixed addition where the Fq product
// count says 2.8x (bench/NOTES.md, session 12). Split over two lanes each thread holds what a G1
// thread holds; a product costs each lane one dot product (mont_t::dot: 6N^2 multiply-adds, 12N^2
// for the pair, as Karatsuba's three products) and 2N word shuffles; a square one Fq product a
// lane. sppark splits its Fq2 the same way.
//
// Every branch a point formula takes depends on is_zero (or ==), which both lanes of a pair
// answer alike, so a pair never diverges; the shuffles name only the pair's two lanes.
#pragma once
#include "fq2.cuh"

template <class F>
struct __align__(16) fp2_pair_t {
    static constexpr int LANES = 2;
    static constexpr bool HAS_DOT = true;  // dot() below: one reduction where F has room for dot4, else two
    static constexpr bool DOT4 = F::DOT_TERMS >= 4;
    typedef fp2_t<F> mem_t;
    F v;  // c0 on the even lane, c1 on the odd lane

    static __device__ __forceinline__ bool odd() { return threadIdx.x & 1; }
    static __device__ __forceinline__ uint32_t pair_mask() { return 3u << ((threadIdx.x & 31) & ~1u); }
    // the partner lane's component
    static __device__ __forceinline__ F partner(const F& a) {
        F r;
        const uint32_t mask = pair_mask();
#pragma unroll
        for (int i = 0; i < F::N; i++) r.v[i] = __shfl_xor_sync(mask, a.v[i], 1);
        return r;
    }
    // Both lanes must reach the shuffle: never behind a short-circuit (a lane left waiting for its
    // partner is undefined behaviour; the first version's MSMs came out wrong and 10x slower).
    static __device__ __forceinline__ bool both(bool flag) {
        const int partner_flag = __shfl_xor_sync(pair_mask(), (int)flag, 1);
        return flag && partner_flag;
    }
    static __device__ __forceinline__ F select(bool c, const F& a, const F& b) {
        F r;
#pragma unroll
        for (int i = 0; i < F::N; i++) r.v[i] = c ? a.v[i] : b.v[i];
        return r;
    }

    static __device__ __forceinline__ fp2_pair_t load(const mem_t& m) { return {F::load((&m.c0)[threadIdx.x & 1])}; }
    __device__ __forceinline__ void store(mem_t& m) const { v.store((&m.c0)[threadIdx.x & 1]); }  // canonical

    static __device__ __forceinline__ fp2_pair_t zero() { return {F::zero()}; }
    static __device__ __forceinline__ fp2_pair_t one() { return {odd() ? F::zero() : F::one()}; }

    __device__ __forceinline__ bool is_zero() const { return both(v.is_zero()); }
    __device__ __forceinline__ bool is_zero_stored() const { return both(v.is_zero_stored()); }
    __device__ __forceinline__ bool operator==(const fp2_pair_t& b) const { return both(v == b.v); }
    __device__ __forceinline__ bool operator!=(const fp2_pair_t& b) const { return !(*this == b); }

    friend __device__ __forceinline__ fp2_pair_t operator+(const fp2_pair_t& a, const fp2_pair_t& b) { return {a.v + b.v}; }
    friend __device__ __forceinline__ fp2_pair_t operator-(const fp2_pair_t& a, const fp2_pair_t& b) { return {a.v - b.v}; }
    __device__ __forceinline__ fp2_pair_t operator-() const { return {-v}; }
    __device__ __forceinline__ fp2_pair_t dbl() const { return {v.dbl()}; }

    // (a0 + a1 u)(b0 + b1 u): the even lane a0 b0 - a1 b1, the odd lane a0 b1 + a1 b0: both lanes take
    // (a0 or a1) times their own b plus (-a1 or a0) times the partner's b, one dot product (one reduction,
    // 6N^2 multiply-adds where two products take 8N^2). The partner's words come by xor shuffles, which
    // compile to one SHFL.BFLY a word; a shuffle from a lane index computed at run time (lane & ~1, lane | 1)
    // under the pair's mask compiled to a WARPSYNC.COLLECTIVE / SHFL.IDX / ENDCOLLECTIVE / BSSY / BSYNC
    // group a word (bench/NOTES.md, session 37). The dot's integer a b + c d is the same either way, so
    // the result is the same word for word.
    friend __device__ __forceinline__ fp2_pair_t operator*(const fp2_pair_t& a, const fp2_pair_t& b) {
        const bool o = odd();
        const F a_p = partner(a.v);
        return {F::dot(select(o, a_p, a.v), b.v, select(o, a.v, -a_p), partner(b.v))};
    }
    // a b + c d: each lane's component of both products in one reduction (mont_t::dot4: 10N^2
    // multiply-adds a lane where a product and a dot product take 12N^2), for a point formula's Y3.
    static __device__ __forceinline__ fp2_pair_t dot(const fp2_pair_t& a, const fp2_pair_t& b, const fp2_pair_t& c,
                                                     const fp2_pair_t& d) {
        if constexpr (!DOT4) {
            return a * b + c * d;  // no room for four terms (BN254's Fq in the lazy form)
        } else {
            const bool o = odd();
            const F a_p = partner(a.v), c_p = partner(c.v);
            const F x[4] = {select(o, a_p, a.v), select(o, a.v, -a_p), select(o, c_p, c.v), select(o, c.v, -c_p)};
            const F y[4] = {b.v, partner(b.v), d.v, partner(d.v)};
            return {F::dot4(x, y)};
        }
    }
    // even lane (a0 + a1)(a0 - a1), odd lane 2 a0 a1
    __device__ __forceinline__ fp2_pair_t sqr() const {
        const bool o = odd();
        const F a_p = partner(v);
        const F t = select(o, v, v + a_p) * select(o, a_p, v - a_p);
        return {select(o, t.dbl(), t)};
    }
    __device__ __forceinline__ fp2_pair_t& operator+=(const fp2_pair_t& b) { return *this = *this + b; }
    __device__ __forceinline__ fp2_pair_t& operator-=(const fp2_pair_t& b) { return *this = *this - b; }
    __device__ __forceinline__ fp2_pair_t& operator*=(const fp2_pair_t& b) { return *this = *this * b; }

    // 1/(a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2); zero maps to zero
    __device__ fp2_pair_t inverse() const {
        const F sq = v.sqr();
        const F r = v * (sq + partner(sq)).inverse();
        return {odd() ? -r : r};
    }
    __device__ __forceinline__ fp2_pair_t to_mont() const { return {v.to_mont()}; }
    __device__ __forceinline__ fp2_pair_t from_mont() const { return {v.from_mont()}; }
};
