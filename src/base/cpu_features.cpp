#include "base/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace strata {

SimdLevel simd_level() {
  static const SimdLevel level = [] {
    const char* forced = std::getenv("STRATA_SIMD");
    if (forced && std::strcmp(forced, "scalar") == 0) return SimdLevel::kScalar;
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2");
    return avx2 ? SimdLevel::kAvx2 : SimdLevel::kScalar;
  }();
  return level;
}

const char* simd_level_name(SimdLevel level) {
  return level == SimdLevel::kAvx2 ? "avx2" : "scalar";
}

}  // namespace strata
