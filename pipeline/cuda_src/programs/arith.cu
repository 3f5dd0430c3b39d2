// Build unit "arith": single field and point operations, for the tests.
#include "curve_types.cuh"
#include "testing/arith_kernels.cuh"
