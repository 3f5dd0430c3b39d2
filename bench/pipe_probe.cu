// Pipe-rate probes for bench/pipe_rates.py (not shipped; compiled from a copy of pipeline/cuda_src with this file
// as programs/pipe_probe.cu). They ask whether the FP64 pipe is free room beside our field products: how many
// 32x32->64 multiply-adds (IMAD.WIDE) and double FMAs (DFMA) an SM retires a clock, alone and interleaved, and
// how much DFMA work fits beside a Montgomery product without slowing it.
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

// PRODUCTS independent Montgomery products an iteration (v[i] *= c) with DFMAS double FMAs beside them. More
// products a thread (ILP) at the same rate: bound by a pipe or issue; a higher rate: the chains' latency bound.
template <class F, int DFMAS, int PRODUCTS>
__global__ void probe_field_mul(typename F::mem_t* __restrict__ d_io, const double* __restrict__ d_din,
                                uint64_t* __restrict__ d_out, uint64_t* __restrict__ d_times, uint32_t iters) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    F v[PRODUCTS];
#pragma unroll
    for (int i = 0; i < PRODUCTS; ++i) v[i] = F::load(d_io[(PRODUCTS + 1) * t + i]);
    const F c = F::load(d_io[(PRODUCTS + 1) * t + PRODUCTS]);
    const double y = d_din[0], z = d_din[1];
    double x[CHAINS];
#pragma unroll
    for (int i = 0; i < CHAINS; ++i) x[i] = d_din[2 + i];
    __syncthreads();
    const uint64_t clk0 = clock64(), ns0 = global_ns();
    for (uint32_t k = 0; k < iters; ++k) {
#pragma unroll
        for (int i = 0; i < PRODUCTS; ++i) v[i] = v[i] * c;
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

template <class F>
__device__ __forceinline__ F fp64_hybrid_mul(const F& a, const F& b) {
    uint32_t t[2 * F::N];
    fp64_wide::product<F::N>(a.v, b.v, t);
    return F::from_wide(t);
}

// The hybrid product's rate: as probe_field_mul with no DFMAs beside.
template <class F, int PRODUCTS>
__global__ void probe_hybrid_mul(typename F::mem_t* __restrict__ d_io, const double* __restrict__ d_din,
                                 uint64_t* __restrict__ d_out, uint64_t* __restrict__ d_times, uint32_t iters) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    F v[PRODUCTS];
#pragma unroll
    for (int i = 0; i < PRODUCTS; ++i) v[i] = F::load(d_io[(PRODUCTS + 1) * t + i]);
    const F c = F::load(d_io[(PRODUCTS + 1) * t + PRODUCTS]);
    __syncthreads();
    const uint64_t clk0 = clock64(), ns0 = global_ns();
    for (uint32_t k = 0; k < iters; ++k) {
#pragma unroll
        for (int i = 0; i < PRODUCTS; ++i) v[i] = fp64_hybrid_mul(v[i], c);
    }
    record_span(d_times, clk0, ns0);
#pragma unroll
    for (int i = 0; i < PRODUCTS; ++i) v[i].store(d_io[(PRODUCTS + 1) * t + i]);
    d_out[t] = d_din[0] != 0.0;
}

// Both products of a[i] and b[i], for the bench's bit-for-bit check: d_ref the field's, d_hyb the hybrid's.
template <class F>
__global__ void probe_hybrid_check(typename F::mem_t* __restrict__ d_ref, typename F::mem_t* __restrict__ d_hyb,
                                   const typename F::mem_t* __restrict__ d_a, const typename F::mem_t* __restrict__ d_b,
                                   uint32_t n) {
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const F a = F::load(d_a[i]), b = F::load(d_b[i]);
        (a * b).store(d_ref[i]);
        fp64_hybrid_mul(a, b).store(d_hyb[i]);
    }
}
