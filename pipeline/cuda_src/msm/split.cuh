// The 0 / 1 split of a bit-heavy witness (DESIGN, "At the seed's scale"): zeros cost nothing,
// ones are one batch addition of their points, only the other scalars go through Pippenger.
//
//  1. msm_classify: two 0/1 flags per scalar (is one, is other), scanned in place by
//     util/scan.cuh into positions (exclusive prefix sums, total at index n).
//  2. msm_compact: the indices of the ones, and of the others with their scalars, each in
//     ascending index order (so a suffix of signals is a suffix of each list).
// The host knows the counts (prep_msm counted them); the device's own totals are copied back
// with the results and compared, so a disagreement is an error, never a wrong proof.
#pragma once

__device__ __forceinline__ void load_scalar(const uint32_t* d_scalars, uint64_t i, uint32_t s[8]) {
#pragma unroll
    for (int k = 0; k < 8; k++) s[k] = d_scalars[8ull * i + k];
}

__global__ void msm_classify(const uint32_t* __restrict__ d_scalars, uint64_t n, uint32_t* __restrict__ d_is_one,
                             uint32_t* __restrict__ d_is_other) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        uint32_t s[8];
        load_scalar(d_scalars, i, s);
        uint32_t high = 0;
#pragma unroll
        for (int k = 1; k < 8; k++) high |= s[k];
        const bool small = high == 0 && s[0] <= 1;
        d_is_one[i] = small && s[0] == 1;
        d_is_other[i] = !small;
    }
}

// cap_one / cap_other: the lists' sizes (the host's counts); a position past them is not written
// (the totals then disagree with the host's, which the result check reports).
__global__ void msm_compact(const uint32_t* __restrict__ d_scalars, uint64_t n, const uint32_t* __restrict__ d_one_pos,
                            const uint32_t* __restrict__ d_other_pos, uint32_t* __restrict__ d_one_idx,
                            uint32_t* __restrict__ d_other_idx, uint32_t* __restrict__ d_other_scalars,
                            uint32_t cap_one, uint32_t cap_other) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t one = d_one_pos[i];
        if (d_one_pos[i + 1] != one && one < cap_one) d_one_idx[one] = (uint32_t)i;
        const uint32_t other = d_other_pos[i];
        if (d_other_pos[i + 1] != other && other < cap_other) {
            d_other_idx[other] = (uint32_t)i;
#pragma unroll
            for (int k = 0; k < 8; k++) d_other_scalars[8ull * other + k] = d_scalars[8ull * i + k];
        }
    }
}

// A streamed pass's tail points, gathered on the device: rows of `row_words` 16-byte words,
// dst[k] = src[idx[k] - first]. src is a key section in page-locked host memory mapped into the
// device's address space (the host gathered them before: ~0.3 s of numpy a 2^26 partition under
// the GPU lock, slower still beside the other Python threads); each thread copies one word.
__global__ void gather_rows(uint4* __restrict__ dst, const uint4* __restrict__ src, const uint32_t* __restrict__ idx,
                            uint64_t count, uint32_t row_words, uint32_t first) {
    const uint64_t total = count * row_words;
    for (uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; t < total; t += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t k = t / row_words;
        const uint32_t w = (uint32_t)(t - k * row_words);
        dst[t] = src[(uint64_t)(idx[k] - first) * row_words + w];
    }
}
