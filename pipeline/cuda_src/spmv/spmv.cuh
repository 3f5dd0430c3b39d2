// a = A w, b = B w over the constraint rows, from the key's coefficients in CSR by row (built
// once at key load). One thread per row. snarkjs's c = a o b is ff_mul's (ntt.cuh), once the
// witness has left the device: the witness and three vectors never share it.
//
// Forms: coefficients are stored value * R^2 (snarkjs), the witness is plain, so one
// Montgomery product gives (value * w) R: a and b come out in Montgomery form.
//
// TABLE: the coefficients are uint16 indices into a table of the key's distinct values
// (formats/coeff_table.py; CudaOptions.csr_value_table), 2 bytes a coefficient read instead of 32:
// d_vals_rr is then the table. Every pointer stays a __restrict__ kernel parameter (one row loop
// for both forms cost the plain form nothing: checked on its SASS).
#pragma once

template <class F, bool TABLE>
__device__ __forceinline__ F spmv_row(const uint32_t* __restrict__ d_row_ptr, const uint32_t* __restrict__ d_cols,
                                      const F* __restrict__ d_vals_rr, const uint16_t* __restrict__ d_index,
                                      const F* __restrict__ d_witness, uint32_t row) {
    F acc = F::zero();
    const uint32_t end = d_row_ptr[row + 1];
    for (uint32_t e = d_row_ptr[row]; e < end; e++) acc += d_vals_rr[TABLE ? d_index[e] : e] * d_witness[d_cols[e]];
    return acc;
}

// SKIP_LONG: rows of more than long_min terms are left to spmv_long_rows (a warp a row).
template <class F, bool TABLE, bool SKIP_LONG = false>
__device__ __forceinline__ void spmv_rows(F* __restrict__ d_a_mont, F* __restrict__ d_b_mont,
                                          const uint32_t* __restrict__ d_a_row_ptr, const uint32_t* __restrict__ d_a_cols,
                                          const F* __restrict__ d_a_vals_rr, const uint16_t* __restrict__ d_a_index,
                                          const uint32_t* __restrict__ d_b_row_ptr, const uint32_t* __restrict__ d_b_cols,
                                          const F* __restrict__ d_b_vals_rr, const uint16_t* __restrict__ d_b_index,
                                          const F* __restrict__ d_witness, uint32_t n_rows, uint32_t long_min = 0) {
    for (uint32_t row = blockIdx.x * blockDim.x + threadIdx.x; row < n_rows; row += gridDim.x * blockDim.x) {
        if (!SKIP_LONG || d_a_row_ptr[row + 1] - d_a_row_ptr[row] <= long_min)
            d_a_mont[row] = spmv_row<F, TABLE>(d_a_row_ptr, d_a_cols, d_a_vals_rr, d_a_index, d_witness, row);
        if (!SKIP_LONG || d_b_row_ptr[row + 1] - d_b_row_ptr[row] <= long_min)
            d_b_mont[row] = spmv_row<F, TABLE>(d_b_row_ptr, d_b_cols, d_b_vals_rr, d_b_index, d_witness, row);
    }
}

template <class F>
__global__ void spmv_ab(F* __restrict__ d_a_mont, F* __restrict__ d_b_mont,
                        const uint32_t* __restrict__ d_a_row_ptr, const uint32_t* __restrict__ d_a_cols,
                        const F* __restrict__ d_a_vals_rr, const uint32_t* __restrict__ d_b_row_ptr,
                        const uint32_t* __restrict__ d_b_cols, const F* __restrict__ d_b_vals_rr,
                        const F* __restrict__ d_witness, uint32_t n_rows) {
    spmv_rows<F, false>(d_a_mont, d_b_mont, d_a_row_ptr, d_a_cols, d_a_vals_rr, nullptr, d_b_row_ptr,
                        d_b_cols, d_b_vals_rr, nullptr, d_witness, n_rows);
}

template <class F>
__global__ void spmv_ab_table(F* __restrict__ d_a_mont, F* __restrict__ d_b_mont,
                              const uint32_t* __restrict__ d_a_row_ptr, const uint32_t* __restrict__ d_a_cols,
                              const uint16_t* __restrict__ d_a_index, const uint32_t* __restrict__ d_b_row_ptr,
                              const uint32_t* __restrict__ d_b_cols, const uint16_t* __restrict__ d_b_index,
                              const F* __restrict__ d_table_rr, const F* __restrict__ d_witness, uint32_t n_rows) {
    spmv_rows<F, true>(d_a_mont, d_b_mont, d_a_row_ptr, d_a_cols, d_table_rr, d_a_index, d_b_row_ptr,
                       d_b_cols, d_table_rr, d_b_index, d_witness, n_rows);
}

// Long rows (CudaOptions.spmv_long_rows). A thread a row leaves a warp as slow as its longest row: in a
// seed-shaped key 5% of A's rows pack 254 bits, so almost every warp of 32 rows meets one and runs 254
// terms where most of its rows have 1-3 (spmv 66 ms of a 2^26 partition's H against 15 ms for a random
// key's rows, bench/results/seed_scale_cuda_bls12381_26_circuit_s14.md). The rows of more than long_min
// terms are listed at key load (spmv_long.py); the short kernels skip them and spmv_long_rows gives each
// a warp: lanes take every 32nd term, then a shuffle tree adds the 32 sums (field addition is exact,
// so the result is the thread-a-row kernel's bit for bit).
template <class F>
__global__ void spmv_ab_short(F* __restrict__ d_a_mont, F* __restrict__ d_b_mont,
                              const uint32_t* __restrict__ d_a_row_ptr, const uint32_t* __restrict__ d_a_cols,
                              const F* __restrict__ d_a_vals_rr, const uint32_t* __restrict__ d_b_row_ptr,
                              const uint32_t* __restrict__ d_b_cols, const F* __restrict__ d_b_vals_rr,
                              const F* __restrict__ d_witness, uint32_t n_rows, uint32_t long_min) {
    spmv_rows<F, false, true>(d_a_mont, d_b_mont, d_a_row_ptr, d_a_cols, d_a_vals_rr, nullptr, d_b_row_ptr,
                              d_b_cols, d_b_vals_rr, nullptr, d_witness, n_rows, long_min);
}

template <class F>
__global__ void spmv_ab_table_short(F* __restrict__ d_a_mont, F* __restrict__ d_b_mont,
                                    const uint32_t* __restrict__ d_a_row_ptr, const uint32_t* __restrict__ d_a_cols,
                                    const uint16_t* __restrict__ d_a_index, const uint32_t* __restrict__ d_b_row_ptr,
                                    const uint32_t* __restrict__ d_b_cols, const uint16_t* __restrict__ d_b_index,
                                    const F* __restrict__ d_table_rr, const F* __restrict__ d_witness, uint32_t n_rows,
                                    uint32_t long_min) {
    spmv_rows<F, true, true>(d_a_mont, d_b_mont, d_a_row_ptr, d_a_cols, d_table_rr, d_a_index, d_b_row_ptr,
                             d_b_cols, d_table_rr, d_b_index, d_witness, n_rows, long_min);
}

// out[d_long[k]] = row d_long[k] of one matrix times the witness, a warp a listed row. d_index null:
// d_vals_rr holds the values; else it is the table and d_index the entries' indices into it.
// A packing row's terms are nearly all over bits: a term over 0 adds nothing and one over 1 adds its
// coefficient (value R^2), summed apart and brought to value R by one product with the integer 1 at the
// end; only the other terms take a product each. A warp's step takes its products only where one of its
// lanes meets a full value (the packed one, once a row), not at every step (session 18).
template <class F>
__global__ void spmv_long_rows(F* __restrict__ d_out, const uint32_t* __restrict__ d_long, uint32_t n_long,
                               const uint32_t* __restrict__ d_row_ptr, const uint32_t* __restrict__ d_cols,
                               const F* __restrict__ d_vals_rr, const uint16_t* __restrict__ d_index,
                               const F* __restrict__ d_witness) {
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, n_warps = (gridDim.x * blockDim.x) >> 5;
    for (uint32_t k = warp; k < n_long; k += n_warps) {  // warp-uniform: every lane meets the shuffles
        const uint32_t row = d_long[k];
        F acc = F::zero(), ones_rr = F::zero();
        const uint32_t end = d_row_ptr[row + 1];
        for (uint32_t e = d_row_ptr[row] + lane; e < end; e += 32) {
            const F w = d_witness[d_cols[e]];
            uint32_t high = 0;
#pragma unroll
            for (int i = 1; i < F::N; i++) high |= w.v[i];
            if (high == 0 && w.v[0] <= 1) {
                if (w.v[0] == 1) ones_rr += d_vals_rr[d_index != nullptr ? d_index[e] : e];
            } else {
                acc += d_vals_rr[d_index != nullptr ? d_index[e] : e] * w;
            }
        }
        acc += ones_rr * F::raw_one();
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            F other;
#pragma unroll
            for (int i = 0; i < F::N; i++) other.v[i] = __shfl_down_sync(0xffffffffu, acc.v[i], off);
            acc += other;
        }
        if (lane == 0) d_out[row] = acc;
    }
}
