// Which SIMD kernels this CPU can run. Kernels compiled for AVX2 (*_avx2.cpp) are only called
// when simd_level() is kAvx2, those compiled for AVX-512 (*_avx512.cpp) only when
// avx512_vnni() is true as well. STRATA_SIMD=scalar forces the scalar reference kernels and
// STRATA_SIMD=avx2 keeps to the AVX2 ones (for tests and for measuring what each level buys).
#pragma once

namespace strata {

enum class SimdLevel { kScalar, kAvx2 };

// Decided once per process from CPUID and the STRATA_SIMD environment variable.
SimdLevel simd_level();
// AVX-512 F, BW and VL with VNNI, on top of kAvx2.
bool avx512_vnni();
// "scalar", "avx2" or "avx2+avx512vnni": what the kernels chosen above use, for logs and JSON.
const char* simd_kernels_name();

}  // namespace strata
