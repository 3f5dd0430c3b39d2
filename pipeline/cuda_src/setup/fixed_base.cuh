// Fixed-base scalar multiplication k G for many scalars k and the group's generator G, with a
// table of multiples kept on the device:
//   d_table[win * half + (d - 1)] = d 2^(c win) G,   d = 1 .. half = 2^(c-1),   win < n_windows
// Scalars are recoded into signed c-bit digits in [-half, half] (one spare bit for the last
// carry: n_windows = ceil((bits + 1) / c)), so k G = sum_win digit_win 2^(c win) G is one mixed
// addition per nonzero digit and no doubling; a negative digit adds the negated entry. The
// table index of a digit is exactly the MSM's bucket key (signed_digit_key in msm/pippenger.cuh).
// Window sizes: the table should fit the L2 cache. The table itself is made by this kernel from a
// small host-made table (entries are G times known scalars; pipeline/backends/cuda/setup_kernels.py).
#pragma once

// d_out[i] = k_i G (XYZZ), k_i = d_scalars[i] (Fr, Montgomery). Launched in blocks of
// SETUP_MUL_THREADS (generated header, pipeline/backends/cuda/launch.py); two resident blocks
// per SM cap the registers at 128, the MSM's choice for its inlined mixed additions on BLS12-381.
template <class F>
__global__ void __launch_bounds__(SETUP_MUL_THREADS, 2)
setup_fixed_base_mul(xyzz_t<F>* __restrict__ d_out, const fr_t* __restrict__ d_scalars, uint64_t n,
                     const affine_t<F>* __restrict__ d_table, int c, int n_windows) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const fr_t k = d_scalars[i].from_mont();
        xyzz_t<F> acc = xyzz_t<F>::inf();
        uint32_t carry = 0;
        for (int win = 0; win < n_windows; win++) {
            bool neg;
            const uint32_t key = signed_digit_key(k.v, win, c, &carry, &neg);
            if (key == MSM_NO_BUCKET) continue;
            const affine_t<F> p = d_table[key];
            acc.add_affine(neg ? p.neg() : p);
        }
        d_out[i] = acc;
    }
}
