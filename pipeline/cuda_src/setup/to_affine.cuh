// XYZZ -> affine in the zkey's stored form (Montgomery coordinates; infinity all zero), with one
// field inversion per thread: Montgomery's trick over the thread's points i = t, t + T, ...
// (T threads in all: coalesced). x = X / ZZ, y = Y / ZZZ; with I = 1/ZZZ and the representation's
// invariant ZZ^3 = ZZZ^2 (ZZ = Z^2, ZZZ = Z^3), 1/Z = ZZ I, so x = X (ZZ I)^2 and y = Y I.
// The forward pass parks the running product before each point in d_out[i].x.
#pragma once

template <class F>
__global__ void setup_xyzz_to_affine(affine_t<F>* __restrict__ d_out, const xyzz_t<F>* __restrict__ d_in, uint64_t n) {
    const uint64_t T = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const uint64_t count = (n - 1 - t) / T + 1;
    F acc = F::one();
    for (uint64_t j = 0; j < count; j++) {
        const uint64_t i = t + j * T;
        d_out[i].x = acc;
        const F zzz = d_in[i].ZZZ;
        if (!zzz.is_zero()) acc *= zzz;
    }
    F inv = acc.inverse();
    for (uint64_t j = count; j-- > 0;) {
        const uint64_t i = t + j * T;
        const xyzz_t<F> p = d_in[i];
        if (p.ZZZ.is_zero()) {
            d_out[i] = {F::zero(), F::zero()};
            continue;
        }
        const F zzz_inv = inv * d_out[i].x;
        inv *= p.ZZZ;
        const F z_inv = p.ZZ * zzz_inv;
        d_out[i] = {p.X * z_inv.sqr(), p.Y * zzz_inv};
    }
}
