// Radix-2 NTT over any mont_t field F, several stages per launch in shared memory.
//
// Index i of an n = 2^L transform is split, for one pass over bits [lo, lo + k), as
//   i = hi << (lo + k) | v << lo | lw,   v in [0, 2^k) the bits this pass transforms.
// A block holds 2^k values of v times 2^tl consecutive lw (coalesced loads of 2^tl elements)
// in shared memory and runs the k butterfly stages of those bits, synchronising in between.
//
// DIF (Gentleman-Sande): natural order in, bit-reversed out; stages from the top bit down.
// DIT (Cooley-Tukey): bit-reversed in, natural order out; stages from bit 0 up.
// Twiddles come from one forward table in one of two layouts, T = 2^log_tw >= n:
//   levels:  tw[h + j] = w_{2h}^j for every half-size h < T and j < h (T entries): each stage
//            reads a contiguous run (coalesced);
//   compact: tw[m] = w_T^m for m < T/2 (a quarter of two level tables): a stage of half-size h
//            reads w_{2h}^j = tw[j << (log_tw - 1 - log2 h)], strided below the top stage (about
//            9% slower at 2^26-27, measured); for keys whose budget is tight.
// The inverse reads the forward table: w_{2h}^-j = -w_{2h}^(h - j) for 0 < j < h (w_{2h}^h = -1),
// the sign folded into the butterfly.
#pragma once

// Butterfly for element pair (e0, e1) = (x, y) at half-size h, twiddle index j:
//   DIF: x' = x + y, y' = (x - y) w^j;   DIT: x' = x + y w^j, y' = x - y w^j.
// With w^j = -t (the inverse's folded sign): DIF y' = (y - x) t; DIT x' = x - y t, y' = x + y t.
template <class F, bool DIT>
__global__ void ntt_pass(F* __restrict__ d_data, const F* __restrict__ d_tw, int lo, int k, int tl, int log_tw,
                         int inverse, int levels) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    F* s = reinterpret_cast<F*>(smem_raw);
    const int n_elems = 1 << (k + tl);
    const uint32_t lw_blocks_log = lo - tl;
    const uint64_t hi = (uint64_t)blockIdx.x >> lw_blocks_log;
    const uint64_t lw_base = ((uint64_t)blockIdx.x & ((1ull << lw_blocks_log) - 1)) << tl;
    const uint32_t tl_mask = (1u << tl) - 1;
    auto global_index = [&](uint32_t e) -> uint64_t {
        const uint64_t v = e >> tl, lt = e & tl_mask;
        return (hi << (lo + k)) | (v << lo) | (lw_base | lt);
    };
    for (int e = threadIdx.x; e < n_elems; e += blockDim.x) s[e] = d_data[global_index(e)];
    __syncthreads();
    const int n_bfly = n_elems >> 1;
    for (int step = 0; step < k; step++) {
        const int t = DIT ? step : k - 1 - step;  // bit of v this stage pairs
        const uint64_t h = 1ull << (lo + t);
        const int shift = log_tw - 1 - (lo + t);  // the compact table's stride at this half-size
        for (int b = threadIdx.x; b < n_bfly; b += blockDim.x) {
            const uint32_t lt = b & tl_mask;
            const uint32_t u = b >> tl;  // k - 1 bits
            const uint32_t v0 = ((u >> t) << (t + 1)) | (u & ((1u << t) - 1));
            const uint32_t e0 = (v0 << tl) | lt, e1 = e0 | (1u << (t + tl));
            const uint64_t j = ((uint64_t)(v0 & ((1u << t) - 1)) << lo) | (lw_base | lt);
            const bool neg = inverse && j != 0;
            const uint64_t jj = neg ? h - j : j;
            const F w = d_tw[levels ? h + jj : jj << shift];
            const F x = s[e0], y = s[e1];
            if (DIT) {
                const F yw = y * w;
                s[e0] = neg ? x - yw : x + yw;
                s[e1] = neg ? x + yw : x - yw;
            } else {
                s[e0] = x + y;
                s[e1] = neg ? (y - x) * w : (x - y) * w;
            }
        }
        __syncthreads();
    }
    for (int e = threadIdx.x; e < n_elems; e += blockDim.x) d_data[global_index(e)] = s[e];
}

__device__ __forceinline__ uint64_t bit_reverse(uint64_t i, int log_n) {
    return log_n == 0 ? 0 : (__brevll(i) >> (64 - log_n));
}

// In-place bit-reversal permutation, every element also multiplied by `scale` (Montgomery).
template <class F>
__global__ void ntt_bit_reverse(F* __restrict__ d_data, int log_n, F scale) {
    const uint64_t n = 1ull << log_n;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t j = bit_reverse(i, log_n);
        if (i < j) {
            const F a = d_data[i], b = d_data[j];
            d_data[i] = b * scale;
            d_data[j] = a * scale;
        } else if (i == j) {
            d_data[i] = d_data[i] * scale;
        }
    }
}

// Coefficients in bit-reversed order (position pos holds coefficient rev(pos)) times n, after a
// DIF inverse pass: multiply by n^-1 g^rev(pos). g^j = g_lo[j mod 2^lo_bits] * g_hi[j >> lo_bits],
// n^-1 folded into g_lo (tables from the host, Montgomery form).
template <class F>
__global__ void ntt_coset_scale(F* __restrict__ d_data, int log_n, const F* __restrict__ d_g_lo,
                                const F* __restrict__ d_g_hi, int lo_bits) {
    const uint64_t n = 1ull << log_n;
    const uint64_t lo_mask = (1ull << lo_bits) - 1;
    for (uint64_t pos = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; pos < n; pos += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t j = bit_reverse(pos, log_n);
        d_data[pos] = d_data[pos] * (d_g_lo[j & lo_mask] * d_g_hi[j >> lo_bits]);
    }
}

// snarkjs's quotient on the odd coset, in place: a = A*B - C (Montgomery in), plain form out. In
// place so that H takes a's buffer: a partition's H phase holds three vectors of the domain, not four.
template <class F>
__global__ void ntt_quotient(F* __restrict__ d_a, const F* __restrict__ d_b, const F* __restrict__ d_c, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        d_a[i] = (d_a[i] * d_b[i] - d_c[i]).from_mont();
}

// The compact table, or the top level of a level table: tw[m] = w^m for m < count, w^m as the
// product of d_pow2[b] = w^(2^b) over m's set bits (no serial chain, every entry independent).
template <class F>
__global__ void ntt_twiddles(F* __restrict__ d_tw, uint64_t count, const F* __restrict__ d_pow2) {
    for (uint64_t m = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; m < count; m += (uint64_t)gridDim.x * blockDim.x) {
        F acc = F::one();
        for (int b = 0; (m >> b) != 0; b++)
            if ((m >> b) & 1) acc = acc * d_pow2[b];
        d_tw[m] = acc;
    }
}

// A level table's lower levels from its top one (h = 2^log_h): w_{2h'}^j = w_{2h}^(j h/h'), i.e.
// tw[h' + j] = tw[h + j h/h'].
template <class F>
__global__ void ntt_twiddle_lower(F* __restrict__ d_tw, int log_h) {
    const uint64_t h = 1ull << log_h;
    for (uint64_t t = 1 + blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; t < h; t += (uint64_t)gridDim.x * blockDim.x) {
        const int log_hl = 63 - __clzll(t);
        const uint64_t j = t - (1ull << log_hl);
        d_tw[t] = d_tw[h + (j << (log_h - log_hl))];
    }
}

// Elementwise conversions and products used around the transforms.
template <class F>
__global__ void ff_to_mont(F* __restrict__ d_out, const F* __restrict__ d_in, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        d_out[i] = d_in[i].to_mont();
}
template <class F>
__global__ void ff_from_mont(F* __restrict__ d_out, const F* __restrict__ d_in, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        d_out[i] = d_in[i].from_mont();
}

// snarkjs's c = a o b on the domain (Montgomery in and out), after the sparse products: the
// witness can leave the device before c's buffer is taken.
template <class F>
__global__ void ff_mul(F* __restrict__ d_out, const F* __restrict__ d_a, const F* __restrict__ d_b, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        d_out[i] = d_a[i] * d_b[i];
}
