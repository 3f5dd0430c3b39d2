// The types of one curve's build. "curve_params.cuh" is generated from pipeline/curves by
// pipeline/backends/cuda/constants.py and handed to NVRTC in memory: the same sources build
// BN254 and BLS12-381, and kernels are instantiated by name expressions over these names.
#pragma once
#include "util/types.cuh"
#include "curve_params.cuh"
#include "ff/mont.cuh"
#include "ff/fq2.cuh"
#include "ff/fq2_pair.cuh"
#include "ec/xyzz.cuh"

typedef mont_t<fr_params> fr_t;  // scalar field
typedef mont_t<fq_params> fq_t;  // base field, G1 coordinates
typedef fp2_t<fq_t> fq2_t;       // G2 coordinates
typedef fp2_pair_t<fq_t> fq2_pair_t;  // G2 coordinates over two lanes (the G2 MSM's kernels)
// The lazy form (ff/mont.cuh: values in [0, 2p), canonical when stored): the MSM's bucket sums.
typedef mont_t<lazy_params<fq_params>> fq_lazy_t;
typedef fp2_pair_t<fq_lazy_t> fq2_pair_lazy_t;
