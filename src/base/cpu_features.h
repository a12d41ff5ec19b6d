// Which SIMD kernels this CPU can run. Kernels compiled for AVX2 (*_avx2.cpp) are only called
// when avx2_fma() is true. STRATA_SIMD=scalar forces the scalar reference kernels (for tests and
// for measuring what SIMD buys).
#pragma once

namespace strata {

enum class SimdLevel { kScalar, kAvx2 };

// Decided once per process from CPUID and the STRATA_SIMD environment variable.
SimdLevel simd_level();
const char* simd_level_name(SimdLevel level);

}  // namespace strata
