// One Montgomery prime field, parameterised by a constants struct P (generated per curve by
// pipeline/backends/cuda/constants.py):
//   P::N    number of 32-bit words;  P::BITS  bit length of p;  P::m0() = -p^-1 mod 2^32 (a literal, or a
//   __constant__ word where it is all ones: constants.py, m0_word)
//   P::mod(i), P::one(i) (R mod p), P::rr(i) (R^2 mod p), P::pm2(i) (p - 2)
// with R = 2^(32 N). Requires p < R/2, checked by the generator.
//
// The lazy form (P::LAZY, lazy_params<P> below): values anywhere in [0, 2p), not reduced below p. A
// product skips its final conditional subtraction where its bound allows (P::LAZY_FREE_TERMS: the
// result of operands below 2p is below 2p as it comes out), sums and differences wrap at 2p, and a
// value is made canonical only where it leaves the thread (store) or is compared (is_zero, ==). That
// saves the subtraction and its selects in most products of a point formula (~6% of a product over
// BLS12-381's Fq, ~37 of ~650 instructions). Loads take canonical words, which are lazy values too.
// The bounds (P::LAZY_TERMS, from the generator) are checked on integers in
// tests/backends/cuda/test_mont_dot_model.py.
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
    static constexpr int LANES = 1;  // threads per element (ff/fq2_pair.cuh splits Fq2 over two)
    static constexpr bool LAZY = P::LAZY;
    // the most terms of one reduction (dot, dot4): a LAZY field's operands are below 2p, not p
    static constexpr int DOT_TERMS = LAZY ? P::LAZY_TERMS : P::DOT_TERMS;
    static constexpr bool HAS_DOT = DOT_TERMS >= 2;  // dot() below (both base fields; not BLS12-381's Fr)
    static_assert(!LAZY || P::LAZY_TERMS >= 1, "this field has no room for the lazy form (4p < R, 3p < R)");
    typedef mont_t mem_t;            // the element's form in memory
    uint32_t v[N];

    static __device__ __forceinline__ mont_t load(const mem_t& m) { return m; }
    __device__ __forceinline__ void store(mem_t& m) const { m = LAZY ? canonical() : *this; }

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
    __device__ __forceinline__ bool is_zero() const {  // lazy: 0 or p
        uint32_t acc = 0, at_p = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            acc |= v[i];
            if (LAZY) at_p |= v[i] ^ P::mod(i);
        }
        return acc == 0 || (LAZY && at_p == 0);
    }
    __device__ __forceinline__ bool is_zero_stored() const {  // a value as stored (canonical): all words 0
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator==(const mont_t& b) const {
        if (LAZY) return (*this - b).is_zero();
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ b.v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator!=(const mont_t& b) const { return !(*this == b); }

    // -- add, sub, neg (inputs and outputs in [0, p); a LAZY field's in [0, 2p)) -------------
    // The modulus sums and differences wrap at: p, or 2p for a LAZY field.
    static __device__ __forceinline__ uint32_t wrap(int i) { return LAZY ? P::mod2(i) : P::mod(i); }
    // r = t - m if t >= m, else t, for m = p (TWICE false) or 2p. t < 2m.
    template <bool TWICE>
    static __device__ __forceinline__ mont_t subtract_once(const mont_t& t) {
        mont_t r;
        uint32_t borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(t.v[0]), "r"(TWICE ? P::mod2(0) : P::mod(0)));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r.v[i]) : "r"(t.v[i]), "r"(TWICE ? P::mod2(i) : P::mod(i)));
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = borrow ? t.v[i] : r.v[i];
        return r;
    }
    static __device__ __forceinline__ mont_t reduce_once(const mont_t& t) { return subtract_once<false>(t); }
    // The value in [0, p) (a LAZY field's store; the identity otherwise).
    __device__ __forceinline__ mont_t canonical() const { return LAZY ? reduce_once(*this) : *this; }

    // a + b over N words, unreduced; the callers' bounds keep it below R (no carry out of the top word)
    static __device__ __forceinline__ mont_t add_words(const uint32_t* a, const uint32_t* b) {
        mont_t t;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(t.v[0]) : "r"(a[0]), "r"(b[0]));
#pragma unroll
        for (int i = 1; i < N - 1; i++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(t.v[i]) : "r"(a[i]), "r"(b[i]));
        asm volatile("addc.u32 %0, %1, %2;" : "=r"(t.v[N - 1]) : "r"(a[N - 1]), "r"(b[N - 1]));
        return t;
    }
    friend __device__ __forceinline__ mont_t operator+(const mont_t& a, const mont_t& b) {
        // a + b < 2 wrap < R (lazy: 4p < R, the generator's LAZY_TERMS)
        return subtract_once<LAZY>(add_words(a.v, b.v));
    }

    friend __device__ __forceinline__ mont_t operator-(const mont_t& a, const mont_t& b) {
        mont_t t, u;
        uint32_t borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(t.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(t.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));  // 0xffffffff when a < b
        // u = t + (wrap & borrow)
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(u.v[0]) : "r"(t.v[0]), "r"(wrap(0) & borrow));
#pragma unroll
        for (int i = 1; i < N; i++)
            asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(u.v[i]) : "r"(t.v[i]), "r"(wrap(i) & borrow));
        return u;
    }

    __device__ __forceinline__ mont_t operator-() const { return zero() - *this; }
    __device__ __forceinline__ mont_t dbl() const { return *this + *this; }

    // -- multiplication: CIOS (Koc, Acar, Kaliski 1996), 32-bit words, even/odd split ------
    // The running sum t is kept as two word arrays whose products never overlap:
    //   e[] "even-aligned": e[j] has weight w^j;   o[] "odd-aligned": o[j] has weight w^(j+1)
    // (w = 2^32). A row x * y adds lo(x_k y) and hi(x_k y) of the even-indexed x_k to e[2k],
    // e[2k+1] and of the odd-indexed x_k to o[2k], o[2k+1]: each row is one carry chain of N
    // multiply-adds in which lo and hi of one product are adjacent (IMAD.WIDE pairs in SASS),
    // and the e-row and the o-row are independent, so ptxas can interleave the two chains
    // (SASS carries live in predicate registers) even though each PTX statement stays
    // `asm volatile` to pin the PTX order the carry flag needs.
    // One step (t + a b_i + m p) / w: after the m*p rows e[0] = 0, and t / w is
    //   e[1] w^0 + (o as even-aligned) + (e[2..] as odd-aligned, shifted down two words),
    // so the two arrays swap roles each step; e[1] is folded into the new even array by one
    // add whose carry enters the shifted odd row at weight w^1. Bounds: as in plain CIOS, the
    // value t + a b_i + m p < 2 p w < w^(N+1) (p < R/2, a < p, b < R), each array holds a part of
    // it exactly, so the o-array (weights up to w^N) cannot overflow and the carries out of
    // its rows and out of the final word are zero; e-row carries go to o[N-1] (weight w^N).
    // Checked word by word against a Python model of these statements (all four primes, edge
    // and random operands) before the device tests. Cost: 4N^2 multiply-adds, as before.
private:
    // acc[2k], acc[2k+1] = lo, hi of x[2k + OFF] * y (no carries)
    template <int OFF>
    static __device__ __forceinline__ void row_mul(uint32_t* acc, const uint32_t* x, uint32_t y) {
#pragma unroll
        for (int k = 0; k < N / 2; k++) {
            asm volatile("mul.lo.u32 %0, %1, %2;" : "=r"(acc[2 * k]) : "r"(x[2 * k + OFF]), "r"(y));
            asm volatile("mul.hi.u32 %0, %1, %2;" : "=r"(acc[2 * k + 1]) : "r"(x[2 * k + OFF]), "r"(y));
        }
    }
    // acc += x[OFF, OFF + 2, ...] * y placed as above; no carry in, leaves the carry out in CC.
    template <int OFF>
    static __device__ __forceinline__ void row_mac(uint32_t* acc, const uint32_t* x, uint32_t y) {
        asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(acc[0]) : "r"(x[OFF]), "r"(y));
        asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(acc[1]) : "r"(x[OFF]), "r"(y));
#pragma unroll
        for (int k = 1; k < N / 2; k++) {
            asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(acc[2 * k]) : "r"(x[2 * k + OFF]), "r"(y));
            asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(acc[2 * k + 1]) : "r"(x[2 * k + OFF]), "r"(y));
        }
    }
    // acc[j] = acc[j + 2] + (row x[1, 3, ...] * y)[j] + carry in (CC); no carry out.
    static __device__ __forceinline__ void row_mac_shift2(uint32_t* acc, const uint32_t* x, uint32_t y) {
#pragma unroll
        for (int k = 0; k < N / 2 - 1; k++) {
            asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(acc[2 * k]) : "r"(x[2 * k + 1]), "r"(y), "r"(acc[2 * k + 2]));
            asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(acc[2 * k + 1]) : "r"(x[2 * k + 1]), "r"(y), "r"(acc[2 * k + 3]));
        }
        asm volatile("madc.lo.cc.u32 %0, %1, %2, 0;" : "=r"(acc[N - 2]) : "r"(x[N - 1]), "r"(y));
        asm volatile("madc.hi.u32 %0, %1, %2, 0;" : "=r"(acc[N - 1]) : "r"(x[N - 1]), "r"(y));
    }
    // One reduction step with word i of every b[k]: sum_k a[k] b[k]_i, then m p. e is even-aligned on
    // entry, o odd-aligned. Terms past the first are dot products' rows (see dot()).
    template <bool FIRST, int K>
    static __device__ __forceinline__ void mul_step(uint32_t* e, uint32_t* o, const mont_t* a, const mont_t* b,
                                                    int i, const uint32_t* p) {
        if (FIRST) {
            row_mul<1>(o, a[0].v, b[0].v[i]);
            row_mul<0>(e, a[0].v, b[0].v[i]);
        } else {
            asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(e[0]) : "r"(o[1]));
            row_mac_shift2(o, a[0].v, b[0].v[i]);
            row_mac<0>(e, a[0].v, b[0].v[i]);
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(o[N - 1]));
        }
#pragma unroll
        for (int k = 1; k < K; k++) {
            row_mac<1>(o, a[k].v, b[k].v[i]);  // carry out is zero (dot's bounds)
            row_mac<0>(e, a[k].v, b[k].v[i]);
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(o[N - 1]));
        }
        const uint32_t m = e[0] * P::m0();
        row_mac<1>(o, p, m);  // carry out is zero (bounds above)
        row_mac<0>(e, p, m);  // zeroes e[0]
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(o[N - 1]));
    }

    // The value after the last step: e + (o shifted down one word), the arrays as the steps leave them.
    static __device__ __forceinline__ mont_t merge_steps(const uint32_t* e, const uint32_t* o) {
        mont_t r;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(e[0]), "r"(o[1]));
#pragma unroll
        for (int j = 1; j < N - 1; j++)
            asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.v[j]) : "r"(e[j]), "r"(o[j + 1]));
        asm volatile("addc.u32 %0, %1, 0;" : "=r"(r.v[N - 1]) : "r"(e[N - 1]));
        return r;
    }

    // sum_k a[k] b[k] / R mod p, K terms, one reduction. A LAZY field's operands are below 2p: its steps
    // stay below (2K + 1) p w, and its result below p (4 K p / R + 1), under 2p as it is for K up to
    // P::LAZY_FREE_TERMS and after one subtraction of p up to P::LAZY_TERMS (generator, constants.py).
    template <int K>
    static __device__ __forceinline__ mont_t product(const mont_t* a, const mont_t* b) {
        static_assert(N % 2 == 0, "even/odd split needs an even word count");
        static_assert(K <= DOT_TERMS, "a dot product of K terms needs (K + 1) p < R ((2K + 1) p < R lazy)");
        uint32_t p[N];
#pragma unroll
        for (int j = 0; j < N; j++) p[j] = P::mod(j);
        uint32_t e[N], o[N];
        mul_step<true, K>(e, o, a, b, 0, p);
        mul_step<false, K>(o, e, a, b, 1, p);
#pragma unroll
        for (int i = 2; i < N; i += 2) {
            mul_step<false, K>(e, o, a, b, i, p);
            mul_step<false, K>(o, e, a, b, i + 1, p);
        }
        const mont_t r = merge_steps(e, o);  // t < 2p < R
        if (LAZY && K <= P::LAZY_FREE_TERMS) return r;
        return reduce_once(r);
    }

public:
    friend __device__ __forceinline__ mont_t operator*(const mont_t& a, const mont_t& b) {
        return product<1>(&a, &b);
    }

    // a b + c d (Montgomery) with one reduction: 6N^2 multiply-adds where two products and a sum
    // take 8N^2 (a point formula's Y3 = R (Q - X3) - S1 PPP, ec/xyzz.cuh; the two-lane Fq2 product,
    // ff/fq2_pair.cuh). Bounds, for K terms: a step's value is t + sum_k a_k b_k,i + m p < (K + 1) p w
    // when t < (K + 1) p, so t stays below (K + 1) p, and (K + 1) p w < w^(N+1) needs (K + 1) p < R
    // (P::DOT_TERMS, the largest such K, from the generator: 8 for BLS12-381's base field, p of 381 of
    // 384 bits, and 4 for BN254's, 254 of 256). The arrays' carries are as in the product: the o rows' carry out is
    // zero, the e rows' goes to o[N-1]. The result (sum + M p) / R < p (K p / R + 1) < 2p for operands
    // below p: one conditional subtraction. Modelled on integers in tests/backends/cuda/test_mont_dot_model.py.
    static __device__ __forceinline__ mont_t dot(const mont_t& a, const mont_t& b, const mont_t& c, const mont_t& d) {
        const mont_t x[2] = {a, c}, y[2] = {b, d};
        return product<2>(x, y);
    }
    // a0 b0 + a1 b1 + a2 b2 + a3 b3 with one reduction (10N^2 multiply-adds against 12N^2 for two dot
    // products: the two-lane Fq2 dot product, ff/fq2_pair.cuh).
    static __device__ __forceinline__ mont_t dot4(const mont_t (&a)[4], const mont_t (&b)[4]) {
        return product<4>(a, b);
    }


private:
    // -- the square: each cross product a_i a_j (i < j) once ----------------------------------
    // T = a^2 as 2N words: row i multiplies a_i by every a_j, j > i, as two carry chains of adjacent
    // lo/hi pairs (the product's even/odd split): the pairs with j - i odd go to `o`, with j - i even to
    // `e`, both indexed by weight (x[k] has weight w^k). Rows run upward, so a chain's low words were
    // written by the rows before and its top is new: a word above `top` (the highest written) is set,
    // not added to. Then T = 2 (e + o) + sum a_i^2 w^(2i), and T / R = redc(T_lo) + T_hi: T_lo's N
    // reduction steps are the product's with their m p rows alone, T_hi is added after. Every dropped
    // carry is zero by the square's bounds, checked statement by statement on integers in
    // tests/backends/cuda/test_mont_square_model.py (which runs the same chain_top choices).
    // Multiply-adds: N (N - 1) + 2N for T and 2N^2 for the reduction, against the product's 4N^2.
    static __host__ __device__ constexpr int cross_last(int s, int j0) { return s + (N - 1 - j0) / 2 * 2 + 1; }  // last hi word
    // the highest word written after a chain from word s over j = j0, j0 + 2, ... (top before it)
    static __host__ __device__ constexpr int chain_top(int s, int j0, int top) {
        return j0 >= N ? top : s > top ? cross_last(s, j0) : (top > cross_last(s, j0) + 1 ? top : cross_last(s, j0) + 1);
    }
    static __host__ __device__ constexpr int cross_top(int rows, bool odd) {  // the highest word of o (odd) or e after `rows` rows
        int o = -1, e = -1;
        for (int i = 0; i < rows; i++) {
            o = chain_top(2 * i + 1, i + 1, o);
            e = chain_top(2 * i + 2, i + 2, e);
        }
        return odd ? o : e;
    }
    // x[S + j - J0] (lo) and the word above (hi) += a[j] * y for j = J0, J0 + 2, ... < N; the carry goes
    // to the word above the last pair. A chain that starts above TOP is plain products (no carries).
    template <int S, int J0, int TOP>
    static __device__ __forceinline__ void cross_chain(uint32_t* x, const uint32_t* a, uint32_t y) {
        if constexpr (J0 < N) {
            if constexpr (S > TOP) {
#pragma unroll
                for (int j = J0; j < N; j += 2) {
                    asm volatile("mul.lo.u32 %0, %1, %2;" : "=r"(x[S + j - J0]) : "r"(a[j]), "r"(y));
                    asm volatile("mul.hi.u32 %0, %1, %2;" : "=r"(x[S + j - J0 + 1]) : "r"(a[j]), "r"(y));
                }
            } else {
                // the first pair's lo word was written (S <= TOP) and starts the chain; any word after it may be new
#pragma unroll
                for (int j = J0; j < N; j += 2) {
                    const int k = S + j - J0;
                    if (j == J0) asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(x[k]) : "r"(a[j]), "r"(y));
                    else if (k <= TOP) asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(x[k]) : "r"(a[j]), "r"(y));
                    else asm volatile("madc.lo.cc.u32 %0, %1, %2, 0;" : "=r"(x[k]) : "r"(a[j]), "r"(y));
                    if (k + 1 <= TOP) asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(x[k + 1]) : "r"(a[j]), "r"(y));
                    else asm volatile("madc.hi.cc.u32 %0, %1, %2, 0;" : "=r"(x[k + 1]) : "r"(a[j]), "r"(y));
                }
                constexpr int C = cross_last(S, J0) + 1;
                if constexpr (C <= TOP) asm volatile("addc.u32 %0, %0, 0;" : "+r"(x[C]));
                else asm volatile("addc.u32 %0, 0, 0;" : "=r"(x[C]));
            }
        }
    }
    template <int I>
    static __device__ __forceinline__ void cross_rows(uint32_t* o, uint32_t* e, const uint32_t* a) {
        if constexpr (I < N - 1) {
            cross_chain<2 * I + 1, I + 1, cross_top(I, true)>(o, a, a[I]);
            cross_chain<2 * I + 2, I + 2, cross_top(I, false)>(e, a, a[I]);
            cross_rows<I + 1>(o, e, a);
        }
    }
    // One reduction step of the product's (mul_step) with its m p rows alone; e even-aligned on entry.
    template <bool FIRST>
    static __device__ __forceinline__ void redc_step(uint32_t* e, uint32_t* o, const uint32_t* p) {
        uint32_t m;
        if (FIRST) {
            m = e[0] * P::m0();
            row_mul<1>(o, p, m);
        } else {
            asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(e[0]) : "r"(o[1]));
            // between the add and the row that takes its carry: mul.lo leaves the carry flag alone
            asm volatile("mul.lo.u32 %0, %1, %2;" : "=r"(m) : "r"(e[0]), "r"(P::m0()));
            row_mac_shift2(o, p, m);
        }
        row_mac<0>(e, p, m);  // zeroes e[0]
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(o[N - 1]));
    }

public:
    // a^2 / R mod p (the cross products once: above). A LAZY field's result, redc(T_lo) <= p plus
    // T_hi < 4p^2 / R, is below 2p where 4p < R, as the product's (LAZY_FREE_TERMS).
    __device__ __forceinline__ mont_t sqr() const {
        static_assert(N % 2 == 0, "even/odd split needs an even word count");
        constexpr int OTOP = cross_top(N - 1, true), ETOP = cross_top(N - 1, false);
        constexpr int TOP = OTOP > ETOP ? OTOP : ETOP;
        static_assert(TOP <= 2 * N - 1 && ETOP >= 2, "the cross sum fits 2N words");
        uint32_t o[2 * N], e[2 * N], t[2 * N];
        cross_rows<0>(o, e, v);
        // t = e + o (o from word 1, e from word 2); the cross sum is below w^(2N) / 2
        t[0] = 0;
        t[1] = o[1];
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(t[2]) : "r"(e[2]), "r"(o[2]));
#pragma unroll
        for (int k = 3; k < 2 * N; k++) {
            const uint32_t ek = k <= ETOP ? e[k] : 0, ok = k <= OTOP ? o[k] : 0;
            if (k < TOP) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(t[k]) : "r"(ek), "r"(ok));
            else if (k == TOP) asm volatile("addc.u32 %0, %1, %2;" : "=r"(t[k]) : "r"(ek), "r"(ok));
            else t[k] = 0;
        }
        // doubled by funnel shifts (the cross sum's top bit is zero), then the squares a_i^2 added
#pragma unroll
        for (int k = 2 * N - 1; k >= 1; k--) t[k] = __funnelshift_l(t[k - 1], t[k], 1);
        asm volatile("mul.lo.u32 %0, %1, %1;" : "=r"(t[0]) : "r"(v[0]));
        asm volatile("mad.hi.cc.u32 %0, %1, %1, %0;" : "+r"(t[1]) : "r"(v[0]));
#pragma unroll
        for (int k = 1; k < N - 1; k++) {
            asm volatile("madc.lo.cc.u32 %0, %1, %1, %0;" : "+r"(t[2 * k]) : "r"(v[k]));
            asm volatile("madc.hi.cc.u32 %0, %1, %1, %0;" : "+r"(t[2 * k + 1]) : "r"(v[k]));
        }
        asm volatile("madc.lo.cc.u32 %0, %1, %1, %0;" : "+r"(t[2 * N - 2]) : "r"(v[N - 1]));
        asm volatile("madc.hi.u32 %0, %1, %1, %0;" : "+r"(t[2 * N - 1]) : "r"(v[N - 1]));
        return from_wide(t);
    }
    // T / R mod p for a 2N-word T = a b with a, b below p (2p for a LAZY field), as redc(T_lo) + T_hi:
    // redc(T_lo) <= p and T_hi < 4p^2 / R, so the sum is below 2p where 4p < R (as above). The square's
    // tail, and the reduction of a product whose 2N words come from elsewhere (bench/pipe_probe.cu).
    static __device__ __forceinline__ mont_t from_wide(const uint32_t* t) {
        // redc(T_lo): the product's steps and sum, the arrays swapping roles each step
        uint32_t p[N], lo[N], hi[N];
#pragma unroll
        for (int j = 0; j < N; j++) {
            p[j] = P::mod(j);
            lo[j] = t[j];
        }
        redc_step<true>(lo, hi, p);
        redc_step<false>(hi, lo, p);
#pragma unroll
        for (int i = 2; i < N; i += 2) {
            redc_step<false>(lo, hi, p);
            redc_step<false>(hi, lo, p);
        }
        const mont_t r = add_words(merge_steps(lo, hi).v, t + N);  // redc(T_lo) + T_hi: below 2p (above)
        if (LAZY && P::LAZY_FREE_TERMS >= 1) return r;
        return reduce_once(r);
    }
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

// P with the lazy form on (the MSM's bucket sums over the base field: curve_types.cuh).
template <class P>
struct lazy_params : P {
    static constexpr bool LAZY = true;
};
