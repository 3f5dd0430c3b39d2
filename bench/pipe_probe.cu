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
