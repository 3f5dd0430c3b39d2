// Kernels that expose single field and point operations to the tests (tests/gpu), so each
// formula is checked against the Python golden model on its own. The op codes (FieldOp and
// PointOp values) come from the generated header (pipeline/backends/cuda/launch.py).
#pragma once

// F::LANES threads per element (ff/fq2_pair.cuh); memory in the element's mem_t layout.
template <class F>
__global__ void test_field_op(typename F::mem_t* __restrict__ d_out, const typename F::mem_t* __restrict__ d_a,
                              const typename F::mem_t* __restrict__ d_b, int op, uint32_t n) {
    const uint32_t first = (blockIdx.x * blockDim.x + threadIdx.x) / F::LANES, step = gridDim.x * blockDim.x / F::LANES;
    for (uint32_t i = first; i < n; i += step) {
        const F a = F::load(d_a[i]), b = F::load(d_b[i]);
        F r;
        switch (op) {
            case OP_ADD: r = a + b; break;
            case OP_SUB: r = a - b; break;
            case OP_MUL: r = a * b; break;
            case OP_SQR: r = a.sqr(); break;
            case OP_NEG: r = -a; break;
            case OP_INV: r = a.inverse(); break;
            case OP_TO_MONT: r = a.to_mont(); break;
            case OP_FROM_MONT: r = a.from_mont(); break;
            case OP_DOT:  // a b + (a + b)(a - b): four distinct operands from two
                if constexpr (F::HAS_DOT) r = F::dot(a, b, a + b, a - b);
                else r = F::zero();  // not built for a field without the headroom; the tests do not ask
                break;
            default: r = a.dbl(); break;
        }
        r.store(d_out[i]);
    }
}

template <class F>
__global__ void test_point_op(typename xyzz_t<F>::mem_t* __restrict__ d_out, const typename xyzz_t<F>::mem_t* __restrict__ d_p,
                              const typename xyzz_t<F>::mem_t* __restrict__ d_q,
                              const typename affine_t<F>::mem_t* __restrict__ d_aff,
                              const uint32_t* __restrict__ d_k, int op, uint32_t n) {
    const uint32_t first = (blockIdx.x * blockDim.x + threadIdx.x) / F::LANES, step = gridDim.x * blockDim.x / F::LANES;
    for (uint32_t i = first; i < n; i += step) {
        xyzz_t<F> p = xyzz_t<F>::load(d_p[i]);
        switch (op) {
            case PT_ADD: p.add(xyzz_t<F>::load(d_q[i])); break;
            case PT_ADD_AFFINE: p.add_affine(affine_t<F>::load(d_aff[i])); break;
            case PT_DBL: p = p.dbl(); break;
            case PT_NEG: p = p.neg(); break;
            default: p = p.mul_u32(d_k[i]); break;
        }
        p.store(d_out[i]);
    }
}

// Busy-waits about `cycles` SM clocks: a long kernel for the event-await loop-lag test.
__global__ void test_spin(uint64_t cycles, uint32_t* __restrict__ d_flag) {
    const uint64_t start = clock64();
    while (clock64() - start < cycles) {}
    if (threadIdx.x == 0 && blockIdx.x == 0) d_flag[0] = 1;
}
