// What the kernel tests share.
#pragma once

namespace strata {

// Whether this CPU runs the *_avx2.cpp kernels (compiled for AVX2, FMA, F16C and BMI2). The
// tests run them wherever it can, whatever STRATA_SIMD lets the engine choose.
inline bool cpu_runs_avx2_kernels() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
}

}  // namespace strata
