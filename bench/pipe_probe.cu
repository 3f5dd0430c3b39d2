// Pipe-rate probes for bench/pipe_rates.py (not shipped; compiled from a copy of pipeline/cuda_src with this file
// as programs/pipe_probe.cu). They ask whether the FP64 pipe is free room beside our field products: how many
// 32x32->64 multiply-adds (IMAD.WIDE) and double FMAs (DFMA) an SM retires a clock, alone and interleaved, and
// how much DFMA work fits beside a Montgomery product without slowing it. Then three other products, timed and
// checked word for word against ours: a b formed whole (on the FP64 pipe, schoolbook, one level of Karatsuba) and
// reduced by mont_t::from_wide (bench/NOTES.md, session 43: all three slower than ours on an H100).
// Every kernel: CHAINS independent chains a thread (latency hidden by ILP and warps), runtime operands (nothing
// folds), a result stored (nothing is dead), and the block's clock64() and global-timer readings at both ends of
// the timed loop (bench/pipe_rates.py takes the grid's span in ns and the SMs' clock from them).
#include "curve_types.cuh"

#define CHAINS 8

__device__ __forceinline__ uint64_t global_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Thread 0 writes the block's clock64 and global-timer (ns) readings at both ends of the timed loop.
__device__ __forceinline__ void record_span(uint64_t* d_times, uint64_t clk0, uint64_t ns0) {
    __syncthreads();  // the block's span: a warp scheduler favouring old warps lets warp 0 finish first
    const uint64_t clk1 = clock64(), ns1 = global_ns();
    if (threadIdx.x == 0) {
        uint64_t* t = d_times + 4 * blockIdx.x;
        t[0] = clk0, t[1] = clk1, t[2] = ns0, t[3] = ns1;
    }
}

__device__ __forceinline__ uint64_t mad_wide(uint32_t a, uint32_t b, uint64_t c) {
    uint64_t r;
    asm("mad.wide.u32 %0, %1, %2, %3;" : "=l"(r) : "r"(a), "r"(b), "l"(c));
    return r;
}

// DFMAS double FMAs over CHAINS accumulators: x = x * y + z, y and z near 1 and 0 so nothing overflows.
template <int DFMAS>
__device__ __forceinline__ void dfma_work(double (&x)[CHAINS], double y, double z) {
#pragma unroll
    for (int j = 0; j < DFMAS; ++j) x[j % CHAINS] = fma(x[j % CHAINS], y, z);
}

// IMADS multiply-adds and DFMAS double FMAs an iteration.
template <int IMADS, int DFMAS>
__global__ void probe_pipes(uint64_t* __restrict__ d_out, const uint32_t* __restrict__ d_in,
                            const double* __restrict__ d_din, uint64_t* __restrict__ d_times, uint32_t iters) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t m = d_in[t & 1023] | 1;
    const double y = d_din[0], z = d_din[1];
    uint64_t acc[CHAINS];
    double x[CHAINS];
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) {
        acc[c] = d_in[(t + c) & 1023];
        x[c] = d_din[2 + c];
    }
    __syncthreads();
    const uint64_t clk0 = clock64(), ns0 = global_ns();
    for (uint32_t k = 0; k < iters; ++k) {
#pragma unroll
        for (int j = 0; j < IMADS; ++j) {
            uint64_t& v = acc[j % CHAINS];  // v = hi(v) m + v: the multiplicand changes each step, so nothing hoists
            v = mad_wide(uint32_t(v >> 32), m, v);
        }
        dfma_work<DFMAS>(x, y, z);
    }
    record_span(d_times, clk0, ns0);
    uint64_t r = 0;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) r ^= acc[c] ^ __double_as_longlong(x[c]);
    d_out[t] = r;
}

// -- a Montgomery product whose multiply half runs on the FP64 pipe (NOTES session 43) -------------------------
// a b as 2N words from 52-bit limbs: each limb product x y < 2^104 splits exactly into
//   hi = fma_rz(x, y, 2^104)                = 2^104 + H 2^52  (H = floor(x y / 2^52): the sum's ulp is 2^52)
//   lo = fma_rz(x, y, 2^104 + 2^52 - hi)    = 2^52 + L        (L = x y mod 2^52; the addend is exact)
// whose bit patterns are HI_BIAS + H and LO_BIAS + L. The columns add the patterns as integers, the biases taken
// off up front; a column sums at most 2L values below 2^52, so it stays exact mod 2^64. Two DFMAs and one DADD
// a limb product on the FP64 pipe, the column sums on the integer ALU; the IMAD pipe is left to the reduction.
namespace fp64_wide {
constexpr uint64_t LO_BIAS = 0x4330000000000000ull;  // the bits of 2^52
constexpr uint64_t HI_BIAS = 0x4670000000000000ull;  // the bits of 2^104
constexpr uint64_t MASK52 = (1ull << 52) - 1;

// (i, j) in [0, L)^2 with i + j = k
__host__ __device__ constexpr int pairs_at(int L, int k) {
    return k < 0 || k > 2 * (L - 1) ? 0 : (k < L ? k + 1 : 2 * L - 1 - k);
}

// limb i (bits 52 i .. 52 i + 51) of an N-word value, as an exact double
template <int N>
__device__ __forceinline__ double limb52(const uint32_t* v, int i) {
    const int s = 52 * i, w = s / 32, r = s % 32;
    uint64_t x = v[w];
    if (w + 1 < N) x |= uint64_t(v[w + 1]) << 32;
    x >>= r;
    if (r > 12 && w + 2 < N) x |= uint64_t(v[w + 2]) << (64 - r);
    return __longlong_as_double((x & MASK52) | LO_BIAS) - 0x1p52;
}

template <int N>
__device__ __forceinline__ void product(const uint32_t* a, const uint32_t* b, uint32_t* t) {
    constexpr int L = (32 * N + 51) / 52;
    double x[L], y[L];
#pragma unroll
    for (int i = 0; i < L; i++) {
        x[i] = limb52<N>(a, i);
        y[i] = limb52<N>(b, i);
    }
    uint64_t col[2 * L];
#pragma unroll
    for (int k = 0; k < 2 * L; k++)
        col[k] = 0ull - (uint64_t(pairs_at(L, k)) * LO_BIAS + uint64_t(pairs_at(L, k - 1)) * HI_BIAS);
#pragma unroll
    for (int i = 0; i < L; i++) {
#pragma unroll
        for (int j = 0; j < L; j++) {
            const double hi = __fma_rz(x[i], y[j], 0x1p104);
            const double lo = __fma_rz(x[i], y[j], 0x1.0000000000001p104 - hi);
            col[i + j] += uint64_t(__double_as_longlong(lo));
            col[i + j + 1] += uint64_t(__double_as_longlong(hi));
        }
    }
    // carries through the 52-bit columns (each below 2^56), then the 2N words
    uint64_t limb[2 * L], c = 0;
#pragma unroll
    for (int k = 0; k < 2 * L; k++) {
        const uint64_t s = col[k] + c;
        limb[k] = s & MASK52;
        c = s >> 52;
    }
#pragma unroll
    for (int w = 0; w < 2 * N; w++) {
        const int s = 32 * w, k = s / 52, r = s % 52;
        uint64_t x = limb[k] >> r;
        if (52 - r < 32 && k + 1 < 2 * L) x |= limb[k + 1] << (52 - r);
        t[w] = uint32_t(x);
    }
}
}  // namespace fp64_wide

// -- the same wide product on the IMAD pipe: schoolbook, and one level of Karatsuba ---------------------------
namespace int_wide {
// t = a b (2N words), row by row as mont_t's rows are: the products of a's even words go to e, of its odd words
// to o, so each row is two carry chains of adjacent lo/hi pairs (IMAD.WIDE in SASS); then t = e + o. Each array
// holds a part of a b < w^(2N) exactly, so a row's carry lands in a word no earlier row wrote.
template <int N>
__device__ __forceinline__ void schoolbook(const uint32_t* a, const uint32_t* b, uint32_t* t) {
    static_assert(N % 2 == 0, "even/odd split needs an even word count");
    uint32_t e[2 * N + 1], o[2 * N + 1];
#pragma unroll
    for (int j = 0; j <= 2 * N; j++) e[j] = o[j] = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
#pragma unroll
        for (int odd = 0; odd < 2; odd++) {
            uint32_t* x = odd ? o : e;
            asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(x[i + odd]) : "r"(a[odd]), "r"(b[i]));
            asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(x[i + odd + 1]) : "r"(a[odd]), "r"(b[i]));
#pragma unroll
            for (int k = 1; k < N / 2; k++) {
                const int j = 2 * k + odd;
                asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(x[i + j]) : "r"(a[j]), "r"(b[i]));
                asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(x[i + j + 1]) : "r"(a[j]), "r"(b[i]));
            }
            asm volatile("addc.u32 %0, %0, 0;" : "+r"(x[i + N + odd]));
        }
    }
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(e[0]), "r"(o[0]));
#pragma unroll
    for (int j = 1; j < 2 * N - 1; j++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(t[j]) : "r"(e[j]), "r"(o[j]));
    asm volatile("addc.u32 %0, %1, %2;" : "=r"(t[2 * N - 1]) : "r"(e[2 * N - 1]), "r"(o[2 * N - 1]));
}

// d = |x - y| (H words); returns all ones where x < y, else 0
template <int H>
__device__ __forceinline__ uint32_t abs_diff(const uint32_t* x, const uint32_t* y, uint32_t* d) {
    uint32_t borrow, junk;
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(d[0]) : "r"(x[0]), "r"(y[0]));
#pragma unroll
    for (int k = 1; k < H; k++) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(d[k]) : "r"(x[k]), "r"(y[k]));
    asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
    // negate where it borrowed: (d ^ borrow) + (borrow & 1), the 1 entering as the first carry
    asm volatile("add.cc.u32 %0, %1, 0xffffffff;" : "=r"(junk) : "r"(borrow & 1));
#pragma unroll
    for (int k = 0; k < H; k++) asm volatile("addc.cc.u32 %0, %1, 0;" : "=r"(d[k]) : "r"(d[k] ^ borrow));
    return borrow;
}

// t = a b with three H-word products (H = N / 2): z0 = a0 b0, z2 = a1 b1, and
// z1 = a0 b1 + a1 b0 = z0 + z2 - (a0 - a1)(b0 - b1), the last from |a0 - a1| |b0 - b1| and the signs.
template <int N>
__device__ __forceinline__ void karatsuba(const uint32_t* a, const uint32_t* b, uint32_t* t) {
    static_assert(N % 2 == 0, "halves of equal size");
    constexpr int H = N / 2;
    uint32_t da[H], db[H], zm[2 * H], z1[2 * H + 1], junk;
    const uint32_t sa = abs_diff<H>(a, a + H, da), sb = abs_diff<H>(b, b + H, db);
    schoolbook<H>(a, b, t);
    schoolbook<H>(a + H, b + H, t + 2 * H);
    schoolbook<H>(da, db, zm);
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(z1[0]) : "r"(t[0]), "r"(t[2 * H]));
#pragma unroll
    for (int k = 1; k < 2 * H; k++)
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(z1[k]) : "r"(t[k]), "r"(t[2 * H + k]));
    asm volatile("addc.u32 %0, 0, 0;" : "=r"(z1[2 * H]));
    // (a0 - a1)(b0 - b1) = +zm where the signs agree: z1 -= zm, as z1 + ~zm + 1; else z1 += zm
    const uint32_t m = ~(sa ^ sb);  // all ones: subtract
    asm volatile("add.cc.u32 %0, %1, 0xffffffff;" : "=r"(junk) : "r"(m & 1));
#pragma unroll
    for (int k = 0; k < 2 * H; k++) asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(z1[k]) : "r"(zm[k] ^ m));
    asm volatile("addc.u32 %0, %0, %1;" : "+r"(z1[2 * H]) : "r"(m));
    // t += z1 w^H; the sum is a b < w^(2N), so nothing carries out of the top word
    asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(t[H]) : "r"(z1[0]));
#pragma unroll
    for (int k = 1; k <= 2 * H; k++) asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(t[H + k]) : "r"(z1[k]));
#pragma unroll
    for (int k = 3 * H + 1; k < 2 * N - 1; k++) asm volatile("addc.cc.u32 %0, %0, 0;" : "+r"(t[k]));
    asm volatile("addc.u32 %0, %0, 0;" : "+r"(t[2 * N - 1]));
}
}  // namespace int_wide

// The products the probe compares: ours (mont_t's interleaved CIOS), and three whose 2N-word a b comes first and
// is reduced by mont_t::from_wide: on the FP64 pipe, schoolbook on the IMAD pipe, Karatsuba on the IMAD pipe.
enum { PRODUCT_OURS = 0, PRODUCT_FP64 = 1, PRODUCT_SCHOOLBOOK = 2, PRODUCT_KARATSUBA = 3 };

template <int KIND, class F>
__device__ __forceinline__ F probe_product(const F& a, const F& b) {
    if constexpr (KIND == PRODUCT_OURS) {
        return a * b;
    } else {
        uint32_t t[2 * F::N];
        if constexpr (KIND == PRODUCT_FP64) fp64_wide::product<F::N>(a.v, b.v, t);
        else if constexpr (KIND == PRODUCT_SCHOOLBOOK) int_wide::schoolbook<F::N>(a.v, b.v, t);
        else int_wide::karatsuba<F::N>(a.v, b.v, t);
        return F::from_wide(t);
    }
}

// PRODUCTS independent products of one kind an iteration (v[i] = v[i] c) with DFMAS double FMAs beside them.
// More products a thread (ILP) at the same rate: bound by a pipe or issue; a higher rate: the chains' latency.
template <class F, int KIND, int DFMAS, int PRODUCTS>
__global__ void probe_field_mul(typename F::mem_t* __restrict__ d_io, const double* __restrict__ d_din,
                                uint64_t* __restrict__ d_out, uint64_t* __restrict__ d_times, uint32_t iters) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    F v[PRODUCTS];
#pragma unroll
    for (int i = 0; i < PRODUCTS; ++i) v[i] = F::load(d_io[(PRODUCTS + 1) * t + i]);
    const F c = F::load(d_io[(PRODUCTS + 1) * t + PRODUCTS]);
    const double y = d_din[0], z = d_din[1];
    double x[CHAINS];  // live only where DFMAS > 0: a row without DFMAs carries none of their registers
#pragma unroll
    for (int i = 0; i < CHAINS; ++i) x[i] = DFMAS > 0 ? d_din[2 + i] : 0.0;
    __syncthreads();
    const uint64_t clk0 = clock64(), ns0 = global_ns();
    for (uint32_t k = 0; k < iters; ++k) {
#pragma unroll
        for (int i = 0; i < PRODUCTS; ++i) v[i] = probe_product<KIND>(v[i], c);
        dfma_work<DFMAS>(x, y, z);
    }
    record_span(d_times, clk0, ns0);
#pragma unroll
    for (int i = 0; i < PRODUCTS; ++i) v[i].store(d_io[(PRODUCTS + 1) * t + i]);
    uint64_t r = 0;
#pragma unroll
    for (int i = 0; i < CHAINS; ++i) r ^= __double_as_longlong(x[i]);
    d_out[t] = r;
}

// Ours and a product kind's results for a[i] b[i], for the bench's word-for-word check.
template <class F, int KIND>
__global__ void probe_product_check(typename F::mem_t* __restrict__ d_ref, typename F::mem_t* __restrict__ d_other,
                                    const typename F::mem_t* __restrict__ d_a,
                                    const typename F::mem_t* __restrict__ d_b, uint32_t n) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const F a = F::load(d_a[i]), b = F::load(d_b[i]);
        (a * b).store(d_ref[i]);
        probe_product<KIND>(a, b).store(d_other[i]);
    }
}
