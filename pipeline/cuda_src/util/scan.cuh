// Exclusive prefix sum of uint32 counts, three launches (reduce tiles, scan the tile sums in
// one block, scan each tile with its offset). out has n + 1 entries: out[n] is the total.
// SCAN_THREADS (threads per block), SCAN_PER_THREAD and SCAN_TILE come from the generated header
// (pipeline/backends/cuda/launch.py), which curve_types.cuh includes.
#pragma once

// Block-wide exclusive scan of one value per thread; returns the block total in *total.
__device__ __forceinline__ uint32_t block_exclusive_scan(uint32_t x, uint32_t* total) {
    __shared__ uint32_t warp_sums[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint32_t incl = x;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += y;
    }
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        const int n_warps = blockDim.x >> 5;
        uint32_t w = lane < n_warps ? warp_sums[lane] : 0;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const uint32_t y = __shfl_up_sync(0xffffffffu, w, d);
            if (lane >= d) w += y;
        }
        warp_sums[lane] = w;  // inclusive over warps
    }
    __syncthreads();
    const uint32_t warp_offset = warp == 0 ? 0 : warp_sums[warp - 1];
    *total = warp_sums[(blockDim.x >> 5) - 1];
    __syncthreads();  // warp_sums is reused by the next call
    return warp_offset + incl - x;
}

__global__ void scan_tile_sums(const uint32_t* __restrict__ d_in, uint64_t n, uint32_t* __restrict__ d_tile_sums) {
    const uint64_t base = (uint64_t)blockIdx.x * SCAN_TILE + (uint64_t)threadIdx.x * SCAN_PER_THREAD;
    uint32_t s = 0;
#pragma unroll
    for (int i = 0; i < SCAN_PER_THREAD; i++) s += base + i < n ? d_in[base + i] : 0;
    uint32_t total;
    block_exclusive_scan(s, &total);
    if (threadIdx.x == 0) d_tile_sums[blockIdx.x] = total;
}

// One block: exclusive scan of the tile sums in place; d_tile_sums[n_tiles] = grand total.
__global__ void scan_tile_offsets(uint32_t* __restrict__ d_tile_sums, uint32_t n_tiles) {
    uint32_t carry = 0;
    for (uint32_t base = 0; base < n_tiles; base += blockDim.x) {
        const uint32_t i = base + threadIdx.x;
        const uint32_t x = i < n_tiles ? d_tile_sums[i] : 0;
        uint32_t total;
        const uint32_t excl = block_exclusive_scan(x, &total);
        if (i < n_tiles) d_tile_sums[i] = carry + excl;
        carry += total;
    }
    if (threadIdx.x == 0) d_tile_sums[n_tiles] = carry;
}

__global__ void scan_apply(const uint32_t* __restrict__ d_in, uint64_t n, const uint32_t* __restrict__ d_tile_offsets,
                           uint32_t* __restrict__ d_out) {
    const uint64_t base = (uint64_t)blockIdx.x * SCAN_TILE + (uint64_t)threadIdx.x * SCAN_PER_THREAD;
    uint32_t v[SCAN_PER_THREAD], s = 0;
#pragma unroll
    for (int i = 0; i < SCAN_PER_THREAD; i++) {
        v[i] = base + i < n ? d_in[base + i] : 0;
        s += v[i];
    }
    uint32_t total;
    uint32_t run = d_tile_offsets[blockIdx.x] + block_exclusive_scan(s, &total);
#pragma unroll
    for (int i = 0; i < SCAN_PER_THREAD; i++) {
        if (base + i < n) d_out[base + i] = run;
        run += v[i];
    }
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) d_out[n] = d_tile_offsets[gridDim.x];
}
