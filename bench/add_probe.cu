// The MSM's inner step alone: XYZZ mixed additions (xyzz_t::add_affine, madd-2008-s) in registers, with no point
// load, digit, bucket or sort in their way, for bench/pipe_rates.py's additions table. Its rate is the most a
// level-0 kernel of these formulas can reach, the measured counterpart of bench/stage_floor.py's product count
// (an addition priced at 9 Fq products in G1, 23 in G2). A build unit of its own (this file beside pipe_probe.cu
// in the probe's source copy), so the G2 instantiations' compile stays out of the pipe rows' unit.
#include "programs/pipe_probe.cu"  // the include path is the source copy's root

// ACCS independent accumulators a point slot (F::LANES threads: fq2_pair_t holds a G2 point over two), each
// adding the slot's two affine points in turn, 2 x iters additions an accumulator. Slot p reads ACCS + 2 points
// from d_pts (two addends, then each accumulator's start) and writes its accumulators to d_acc.
template <class F, int ACCS>
__global__ void probe_madd(const typename affine_t<F>::mem_t* __restrict__ d_pts,
                           typename xyzz_t<F>::mem_t* __restrict__ d_acc, uint64_t* __restrict__ d_times,
                           uint32_t iters) {
    const uint32_t p = (blockIdx.x * blockDim.x + threadIdx.x) / F::LANES;
    const typename affine_t<F>::mem_t* pts = d_pts + (ACCS + 2) * p;
    const affine_t<F> q0 = affine_t<F>::load(pts[0]), q1 = affine_t<F>::load(pts[1]);
    xyzz_t<F> acc[ACCS];
#pragma unroll
    for (int i = 0; i < ACCS; ++i) {
        const affine_t<F> s = affine_t<F>::load(pts[2 + i]);
        acc[i] = {s.x, s.y, F::one(), F::one()};
    }
    __syncthreads();
    const uint64_t clk0 = clock64(), ns0 = global_ns();
    for (uint32_t k = 0; k < iters; ++k) {
#pragma unroll
        for (int i = 0; i < ACCS; ++i) acc[i].add_affine(q0);
#pragma unroll
        for (int i = 0; i < ACCS; ++i) acc[i].add_affine(q1);
    }
    record_span(d_times, clk0, ns0);
#pragma unroll
    for (int i = 0; i < ACCS; ++i) acc[i].store(d_acc[ACCS * p + i]);
}
