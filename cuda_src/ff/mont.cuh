// One Montgomery prime field, parameterised by a constants struct P (generated per curve by
// pipeline/backends/cuda/constants.py):
//   P::N    number of 32-bit words;  P::BITS  bit length of p;  P::M0 = -p^-1 mod 2^32
//   P::mod(i), P::one(i) (R mod p), P::rr(i) (R^2 mod p), P::pm2(i) (p - 2)
// with R = 2^(32 N). Requires p < R/2, checked by the generator.
//
// Why 32-bit words: the SM multiplies 32 x 32 bits natively (IMAD); a 64 x 64 -> 128-bit
// product is emulated with four of them plus carry fix-ups in C. PTX's mad.lo/hi with carry
// flags (.cc / madc) chain the partial products without extra compare instructions. The
// host's little-endian uint64 limbs have exactly the bytes of twice as many uint32 words,
// so Montgomery form (R = 2^(64 * limbs)) is the same on both sides.
//
// Every carry-chain instruction is its own `asm volatile`: the carry flag lives between
// statements, and without `volatile` the compiler may reorder them (a first build did, and
// every sum came out unreduced).
#pragma once
#include "../util/types.cuh"

template <class P>
struct __align__(16) mont_t {
    static constexpr int N = P::N;
    static constexpr int BITS = P::BITS;
    uint32_t v[N];

    // -- constants -------------------------------------------------------------------------
    static __device__ __forceinline__ mont_t zero() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    static __device__ __forceinline__ mont_t one() {  // 1 in Montgomery form (R mod p)
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::one(i);
        return r;
    }
    static __device__ __forceinline__ mont_t raw_one() {  // the integer 1 (R^-1 in Montgomery terms)
        mont_t r = zero();
        r.v[0] = 1;
        return r;
    }
    static __device__ __forceinline__ mont_t modulus() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::mod(i);
        return r;
    }

    // -- predicates --------------------------------------------------------------------------
    __device__ __forceinline__ bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator==(const mont_t& b) const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ b.v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator!=(const mont_t& b) const { return !(*this == b); }

    // -- add, sub, neg (inputs and outputs reduced, in [0, p)) -------------------------------
    // r = t - p if t >= p, else t. t < 2p.
    static __device__ __forceinline__ mont_t reduce_once(const mont_t& t) {
        mont_t r;
        uint32_t borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(t.v[0]), "r"(P::mod(0)));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r.v[i]) : "r"(t.v[i]), "r"(P::mod(i)));
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = borrow ? t.v[i] : r.v[i];
        return r;
    }

    friend __device__ __forceinline__ mont_t operator+(const mont_t& a, const mont_t& b) {
        mont_t t;  // a + b < 2p < R: no carry out of the top word
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(t.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int i = 1; i < N - 1; i++)
            asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(t.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
        asm volatile("addc.u32 %0, %1, %2;" : "=r"(t.v[N - 1]) : "r"(a.v[N - 1]), "r"(b.v[N - 1]));
        return reduce_once(t);
    }

    friend __device__ __forceinline__ mont_t operator-(const mont_t& a, const mont_t& b) {
        mont_t t, u;
        uint32_t borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(t.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(t.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));  // 0xffffffff when a < b
        // u = t + (p & borrow)
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(u.v[0]) : "r"(t.v[0]), "r"(P::mod(0) & borrow));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(u.v[i]) : "r"(t.v[i]), "r"(P::mod(i) & borrow));
        return u;
    }

    __device__ __forceinline__ mont_t operator-() const { return zero() - *this; }
    __device__ __forceinline__ mont_t dbl() const { return *this + *this; }

    // -- multiplication: CIOS (Koc, Acar, Kaliski 1996), 32-bit words --------------------------
    // Loop invariant t < 2p < 2^(32N) between iterations (a < p, b < 2^(32N)); before the shift
    // t < 2p * 2^32, so N + 1 words hold it. Cost: 4N^2 multiply-adds.
    friend __device__ __forceinline__ mont_t operator*(const mont_t& a, const mont_t& b) {
        uint32_t t[N + 1];
#pragma unroll
        for (int j = 0; j <= N; j++) t[j] = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            const uint32_t bi = b.v[i];
            // t += a * b_i: low halves into t[j], high halves into t[j + 1]
            asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(a.v[0]), "r"(bi));
#pragma unroll
            for (int j = 1; j < N; j++)
                asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(a.v[j]), "r"(bi));
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N]));
            asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(a.v[0]), "r"(bi));
#pragma unroll
            for (int j = 1; j < N - 1; j++)
                asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(a.v[j]), "r"(bi));
            asm volatile("madc.hi.u32 %0, %1, %2, %0;" : "+r"(t[N]) : "r"(a.v[N - 1]), "r"(bi));
            // t += m * p with m = t[0] * M0 mod 2^32, which zeroes t[0]
            const uint32_t m = t[0] * P::M0;
            asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[0]) : "r"(m), "r"(P::mod(0)));
#pragma unroll
            for (int j = 1; j < N; j++)
                asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(t[j]) : "r"(m), "r"(P::mod(j)));
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[N]));
            asm volatile("mad.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[1]) : "r"(m), "r"(P::mod(0)));
#pragma unroll
            for (int j = 1; j < N - 1; j++)
                asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(t[j + 1]) : "r"(m), "r"(P::mod(j)));
            asm volatile("madc.hi.u32 %0, %1, %2, %0;" : "+r"(t[N]) : "r"(m), "r"(P::mod(N - 1)));
            // divide by 2^32
#pragma unroll
            for (int j = 0; j < N; j++) t[j] = t[j + 1];
            t[N] = 0;
        }
        mont_t r;
#pragma unroll
        for (int j = 0; j < N; j++) r.v[j] = t[j];
        return reduce_once(r);
    }

    __device__ __forceinline__ mont_t sqr() const { return *this * *this; }
    __device__ __forceinline__ mont_t& operator+=(const mont_t& b) { return *this = *this + b; }
    __device__ __forceinline__ mont_t& operator-=(const mont_t& b) { return *this = *this - b; }
    __device__ __forceinline__ mont_t& operator*=(const mont_t& b) { return *this = *this * b; }

    // -- conversions -------------------------------------------------------------------------
    __device__ __forceinline__ mont_t to_mont() const {  // x -> x R
        mont_t rr;
#pragma unroll
        for (int i = 0; i < N; i++) rr.v[i] = P::rr(i);
        return *this * rr;
    }
    __device__ __forceinline__ mont_t from_mont() const { return *this * raw_one(); }  // x R -> x

    // -- powers ------------------------------------------------------------------------------
    // this^e for an exponent of n_words 32-bit words (square-and-multiply, MSB first).
    __device__ mont_t pow(const uint32_t* e, int n_words) const {
        mont_t acc = one();
        for (int w = n_words - 1; w >= 0; w--) {
            const uint32_t ew = e[w];
            for (int bit = 31; bit >= 0; bit--) {
                acc = acc.sqr();
                if ((ew >> bit) & 1) acc = acc * *this;
            }
        }
        return acc;
    }
    __device__ mont_t pow_u32(uint32_t e) const { return pow(&e, 1); }

    // Fermat: a^(p-2); the inverse of zero is zero (callers check where it matters).
    __device__ mont_t inverse() const {
        uint32_t e[N];
#pragma unroll
        for (int i = 0; i < N; i++) e[i] = P::pm2(i);
        return pow(e, N);
    }
};
