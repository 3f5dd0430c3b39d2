// Build unit "msm_g2": the bucket MSM kernels over G2 (coordinates in Fq2). The digit sort
// and the scan are shared with msm_g1 and built there.
#include "curve_types.cuh"
#include "msm/pippenger.cuh"
#include "setup/to_affine.cuh"  // fixed-base tables made affine
