// Fixed-width integer types. NVRTC builds without the host's headers, so they are declared
// here; under nvcc (local checks) <cstdint> provides them.
#pragma once
#ifdef __CUDACC_RTC__
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef int int32_t;
typedef long long int64_t;
#else
#include <cstdint>
#endif
