// Per-signal evaluations of one matrix at tau, u_j = sum_c M[c][j] L_c(tau): a transposed sparse
// product. The terms (row, signal, code) come in .r1cs order; a term's value is d_table[code]
// (the circuit's few distinct coefficients, plain form). A counting sort groups the terms by
// signal (integer atomics, warp-aggregated because the constant signal 0 sits in almost every
// row of a bit-heavy circuit; the order within a signal varies from run to run, which the
// exact field sum does not see). Then each signal's terms are summed in chunks of at most
// `chunk`, one thread per chunk, level after level until one partial per signal: the MSM's
// bucket scheme (msm_chunk_counts, bucket_of in msm/pippenger.cuh), so no thread sums more
// than a chunk even for a signal in every row. No float or field atomics.
//
// Forms: table values plain, L Montgomery, so one Montgomery product gives the plain v L;
// partial sums stay plain and the last step turns them Montgomery.
#pragma once
#include "codes.cuh"

__global__ void setup_count_signals(const uint32_t* __restrict__ d_signals, uint64_t m, uint32_t* __restrict__ d_counts) {
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x; base < m; base += stride) {  // warp-uniform trips
        const uint64_t i = base + threadIdx.x;
        warp_aggregated_inc(d_counts, i < m ? d_signals[i] : MSM_NO_BUCKET);
    }
}

// d_cursor starts as each signal's offset (the exclusive scan of the counts).
__global__ void setup_scatter_by_signal(const uint32_t* __restrict__ d_signals, const uint32_t* __restrict__ d_rows,
                                        const setup_code_t* __restrict__ d_codes, uint64_t m,
                                        uint32_t* __restrict__ d_cursor, uint32_t* __restrict__ d_sorted_rows,
                                        setup_code_t* __restrict__ d_sorted_codes) {
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x; base < m; base += stride) {
        const uint64_t i = base + threadIdx.x;
        const uint32_t key = i < m ? d_signals[i] : MSM_NO_BUCKET;
        const uint32_t slot = warp_aggregated_inc(d_cursor, key);
        if (key != MSM_NO_BUCKET) {
            d_sorted_rows[slot] = d_rows[i];
            d_sorted_codes[slot] = d_codes[i];
        }
    }
}

// Entries [*start, *end) of chunk `ch`: its signal's entries from d_offsets, cut every `chunk`.
__device__ __forceinline__ void setup_chunk_range(const uint32_t* __restrict__ d_offsets,
                                                  const uint32_t* __restrict__ d_chunk_off, uint32_t n_signals,
                                                  uint32_t chunk, uint32_t ch, uint32_t* start, uint32_t* end) {
    const uint32_t s = bucket_of(d_chunk_off, n_signals, ch);
    *start = d_offsets[s] + (ch - d_chunk_off[s]) * chunk;
    *end = min(*start + chunk, d_offsets[s + 1]);
}

// Level 0, one thread per chunk: sum of table[code] * L[row] over the chunk's terms.
template <class F>
__global__ void setup_term_sums(F* __restrict__ d_out, const setup_code_t* __restrict__ d_codes,
                                const uint32_t* __restrict__ d_rows, const F* __restrict__ d_table,
                                const F* __restrict__ d_lagrange, const uint32_t* __restrict__ d_offsets,
                                const uint32_t* __restrict__ d_chunk_off, uint32_t n_signals, uint32_t chunk,
                                uint32_t n_chunks) {
    for (uint32_t ch = blockIdx.x * blockDim.x + threadIdx.x; ch < n_chunks; ch += gridDim.x * blockDim.x) {
        uint32_t start, end;
        setup_chunk_range(d_offsets, d_chunk_off, n_signals, chunk, ch, &start, &end);
        F acc = F::zero();
        for (uint32_t e = start; e < end; e++) acc += d_table[d_codes[e]] * d_lagrange[d_rows[e]];
        d_out[ch] = acc;
    }
}

// Later levels: sums of the previous level's partials, chunk by chunk, in order.
template <class F>
__global__ void setup_partial_sums(F* __restrict__ d_out, const F* __restrict__ d_partials,
                                   const uint32_t* __restrict__ d_offsets, const uint32_t* __restrict__ d_chunk_off,
                                   uint32_t n_signals, uint32_t chunk, uint32_t n_chunks) {
    for (uint32_t ch = blockIdx.x * blockDim.x + threadIdx.x; ch < n_chunks; ch += gridDim.x * blockDim.x) {
        uint32_t start, end;
        setup_chunk_range(d_offsets, d_chunk_off, n_signals, chunk, ch, &start, &end);
        F acc = F::zero();
        for (uint32_t e = start; e < end; e++) acc += d_partials[e];
        d_out[ch] = acc;
    }
}

// d_out[s] = the single partial of signal s (zero for a signal in no term), to Montgomery form.
template <class F>
__global__ void setup_signal_values(F* __restrict__ d_out, const F* __restrict__ d_partials,
                                    const uint32_t* __restrict__ d_chunk_off, uint32_t n_signals) {
    for (uint32_t s = blockIdx.x * blockDim.x + threadIdx.x; s < n_signals; s += gridDim.x * blockDim.x)
        d_out[s] = d_chunk_off[s + 1] > d_chunk_off[s] ? d_partials[d_chunk_off[s]].to_mont() : F::zero();
}
