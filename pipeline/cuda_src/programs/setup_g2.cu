// Build unit "setup_g2": fixed-base multiplication of the generator and the affine conversion
// over G2 (see setup/fixed_base.cuh); the digit recoding is the MSM's (msm/pippenger.cuh).
#include "curve_types.cuh"
#include "msm/pippenger.cuh"
#include "setup/fixed_base.cuh"
#include "setup/to_affine.cuh"
