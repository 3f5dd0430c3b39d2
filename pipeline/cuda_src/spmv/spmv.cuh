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

template <class F, bool TABLE>
__device__ __forceinline__ void spmv_rows(F* __restrict__ d_a_mont, F* __restrict__ d_b_mont,
                                          const uint32_t* __restrict__ d_a_row_ptr, const uint32_t* __restrict__ d_a_cols,
                                          const F* __restrict__ d_a_vals_rr, const uint16_t* __restrict__ d_a_index,
                                          const uint32_t* __restrict__ d_b_row_ptr, const uint32_t* __restrict__ d_b_cols,
                                          const F* __restrict__ d_b_vals_rr, const uint16_t* __restrict__ d_b_index,
                                          const F* __restrict__ d_witness, uint32_t n_rows) {
    for (uint32_t row = blockIdx.x * blockDim.x + threadIdx.x; row < n_rows; row += gridDim.x * blockDim.x) {
        d_a_mont[row] = spmv_row<F, TABLE>(d_a_row_ptr, d_a_cols, d_a_vals_rr, d_a_index, d_witness, row);
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
