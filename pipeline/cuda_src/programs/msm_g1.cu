// Build unit "msm_g1": counting sort of digits and the bucket MSM over G1 (coordinates in Fq).
#include "curve_types.cuh"
#include "util/scan.cuh"
#include "msm/pippenger.cuh"
