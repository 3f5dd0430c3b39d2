// a = A w, b = B w over the constraint rows, and c = a o b (snarkjs's c), from the key's
// coefficients in CSR by row (built once at key load). One thread per row.
//
// Forms: coefficients are stored value * R^2 (snarkjs), the witness is plain, so one
// Montgomery product gives (value * w) R: a, b and c come out in Montgomery form.
#pragma once

template <class F>
__device__ __forceinline__ F spmv_row(const uint32_t* __restrict__ d_row_ptr, const uint32_t* __restrict__ d_cols,
                                      const F* __restrict__ d_vals_rr, const F* __restrict__ d_witness, uint32_t row) {
    F acc = F::zero();
    const uint32_t end = d_row_ptr[row + 1];
    for (uint32_t e = d_row_ptr[row]; e < end; e++) acc += d_vals_rr[e] * d_witness[d_cols[e]];
    return acc;
}

template <class F>
__global__ void spmv_abc(F* __restrict__ d_a_mont, F* __restrict__ d_b_mont, F* __restrict__ d_c_mont,
                         const uint32_t* __restrict__ d_a_row_ptr, const uint32_t* __restrict__ d_a_cols,
                         const F* __restrict__ d_a_vals_rr, const uint32_t* __restrict__ d_b_row_ptr,
                         const uint32_t* __restrict__ d_b_cols, const F* __restrict__ d_b_vals_rr,
                         const F* __restrict__ d_witness, uint32_t n_rows) {
    for (uint32_t row = blockIdx.x * blockDim.x + threadIdx.x; row < n_rows; row += gridDim.x * blockDim.x) {
        const F a = spmv_row(d_a_row_ptr, d_a_cols, d_a_vals_rr, d_witness, row);
        const F b = spmv_row(d_b_row_ptr, d_b_cols, d_b_vals_rr, d_witness, row);
        d_a_mont[row] = a;
        d_b_mont[row] = b;
        d_c_mont[row] = a * b;
    }
}

// The same products with the coefficients as uint16 indices into a table of the key's distinct
// values (keycache/coeff_table.py; CudaOptions.csr_value_table): 2 bytes a coefficient read
// instead of 32. The kernel above is kept as it is (measured) rather than shared through a value
// accessor, which would give its pointers up as kernel parameters marked __restrict__.
template <class F>
__device__ __forceinline__ F spmv_row_table(const uint32_t* __restrict__ d_row_ptr, const uint32_t* __restrict__ d_cols,
                                            const uint16_t* __restrict__ d_index, const F* __restrict__ d_table_rr,
                                            const F* __restrict__ d_witness, uint32_t row) {
    F acc = F::zero();
    const uint32_t end = d_row_ptr[row + 1];
    for (uint32_t e = d_row_ptr[row]; e < end; e++) acc += d_table_rr[d_index[e]] * d_witness[d_cols[e]];
    return acc;
}

template <class F>
__global__ void spmv_abc_table(F* __restrict__ d_a_mont, F* __restrict__ d_b_mont, F* __restrict__ d_c_mont,
                               const uint32_t* __restrict__ d_a_row_ptr, const uint32_t* __restrict__ d_a_cols,
                               const uint16_t* __restrict__ d_a_index, const uint32_t* __restrict__ d_b_row_ptr,
                               const uint32_t* __restrict__ d_b_cols, const uint16_t* __restrict__ d_b_index,
                               const F* __restrict__ d_table_rr, const F* __restrict__ d_witness, uint32_t n_rows) {
    for (uint32_t row = blockIdx.x * blockDim.x + threadIdx.x; row < n_rows; row += gridDim.x * blockDim.x) {
        const F a = spmv_row_table(d_a_row_ptr, d_a_cols, d_a_index, d_table_rr, d_witness, row);
        const F b = spmv_row_table(d_b_row_ptr, d_b_cols, d_b_index, d_table_rr, d_witness, row);
        d_a_mont[row] = a;
        d_b_mont[row] = b;
        d_c_mont[row] = a * b;
    }
}
