#include "base/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace strata {
namespace {

bool forced_to(const char* level) {
  const char* forced = std::getenv("STRATA_SIMD");
  return forced && std::strcmp(forced, level) == 0;
}

}  // namespace

SimdLevel simd_level() {
  static const SimdLevel level = [] {
    if (forced_to("scalar")) return SimdLevel::kScalar;
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
    return avx2 ? SimdLevel::kAvx2 : SimdLevel::kScalar;
  }();
  return level;
}

bool avx512_vnni() {
  static const bool supported = [] {
    if (simd_level() != SimdLevel::kAvx2 || forced_to("avx2")) return false;
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  }();
  return supported;
}

const char* simd_kernels_name() {
  if (simd_level() == SimdLevel::kScalar) return "scalar";
  return avx512_vnni() ? "avx2+avx512vnni" : "avx2";
}

}  // namespace strata
