// Elementwise scalar steps of the setup (Fr, Montgomery unless said).
#pragma once
#include "codes.cuh"

// d_out[i] = (beta u_i + alpha v_i + w_i) * scale: the IC (scale 1/gamma) and C (1/delta)
// scalars. d_out may be d_w (in place), so neither is __restrict__.
template <class F>
__global__ void setup_combine(F* d_out, const F* __restrict__ d_u, const F* __restrict__ d_v, const F* d_w, uint64_t n,
                              F beta, F alpha, F scale) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        d_out[i] = (beta * d_u[i] + alpha * d_v[i] + d_w[i]) * scale;
}

// The coefficient section: d_out[d_pos[i]] = d_table[d_codes[i]] R^2 mod r, snarkjs's stored form,
// from plain table values (two Montgomery conversions: x -> x R -> x R^2), placed in record order.
template <class F>
__global__ void setup_stored_coefficients(F* __restrict__ d_out, const setup_code_t* __restrict__ d_codes,
                                          const F* __restrict__ d_table, const uint32_t* __restrict__ d_pos,
                                          uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        d_out[d_pos[i]] = d_table[d_codes[i]].to_mont().to_mont();
}
