// Build unit "msm_g1": counting sort of digits and the bucket MSM over G1 (coordinates in Fq), and the
// 0 / 1 split of a witness (field-agnostic: it reads Fr scalars only).
#include "curve_types.cuh"
#include "util/scan.cuh"
#include "msm/pippenger.cuh"
#include "setup/to_affine.cuh"  // fixed-base tables made affine
#include "msm/split.cuh"
