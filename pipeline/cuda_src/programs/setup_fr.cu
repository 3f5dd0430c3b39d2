// Build unit "setup_fr": the scalar side of the development setup over Fr (Lagrange values,
// per-signal evaluations, combinations, stored coefficients). The scan and the chunk offsets
// are the MSM's (util/scan.cuh, msm/pippenger.cuh), instantiated here too.
#include "curve_types.cuh"
#include "util/scan.cuh"
#include "msm/pippenger.cuh"
#include "setup/lagrange.cuh"
#include "setup/evaluate.cuh"
#include "setup/combine.cuh"
