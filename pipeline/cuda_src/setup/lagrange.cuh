// Lagrange values at tau on a domain of N = 2^log_N points, for the indices k = start + stride i:
//   d_out[i] = scale * w^k / (tau - w^k),   i < n
// With scale = (tau^N - 1) / N these are L_k(tau); the H section folds 1/delta into scale
// (pipeline/setup/scalars.py derives what each key point holds). A zero denominator (tau on
// the domain, which the secrets exclude) gives 0. All values Montgomery.
//
// w^k = d_w_lo[k mod 2^lo_bits] * d_w_hi[k >> lo_bits]: two tables of ~sqrt(N) powers from the
// host (the caller keeps k < N). Batch inversion (Montgomery's trick) runs per thread over its
// elements i = t, t + T, t + 2T, ... (T threads in all, so a warp's accesses are coalesced): the
// forward pass parks the running product before each element in d_out, one Fermat inversion
// per thread, then the backward pass recomputes each denominator and peels the running
// inverse. Per element ~8 multiplications, plus the thread's inversion (~380) over its elements.
#pragma once

template <class F>
__device__ __forceinline__ F setup_root_power(const F* __restrict__ d_w_lo, const F* __restrict__ d_w_hi,
                                              int lo_bits, uint64_t k) {
    return d_w_lo[k & ((1ull << lo_bits) - 1)] * d_w_hi[k >> lo_bits];
}

template <class F>
__global__ void setup_lagrange(F* __restrict__ d_out, uint64_t n, uint64_t start, uint64_t stride, F tau, F scale,
                               const F* __restrict__ d_w_lo, const F* __restrict__ d_w_hi, int lo_bits) {
    const uint64_t T = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const uint64_t count = (n - 1 - t) / T + 1;  // this thread's elements
    F acc = F::one();
    for (uint64_t j = 0; j < count; j++) {
        const uint64_t i = t + j * T;
        const F den = tau - setup_root_power(d_w_lo, d_w_hi, lo_bits, start + stride * i);
        d_out[i] = acc;  // product of the earlier denominators
        if (!den.is_zero()) acc *= den;
    }
    F inv = acc.inverse();  // 1 / (product of all this thread's nonzero denominators)
    for (uint64_t j = count; j-- > 0;) {
        const uint64_t i = t + j * T;
        const F wk = setup_root_power(d_w_lo, d_w_hi, lo_bits, start + stride * i);
        const F den = tau - wk;
        if (den.is_zero()) {
            d_out[i] = F::zero();
            continue;
        }
        const F den_inv = inv * d_out[i];
        inv *= den;
        d_out[i] = scale * wk * den_inv;
    }
}
