// Build unit "ntt": transforms, the coset quotient, conversions and the sparse mat-vec over Fr.
#include "curve_types.cuh"
#include "ntt/ntt.cuh"
#include "spmv/spmv.cuh"
