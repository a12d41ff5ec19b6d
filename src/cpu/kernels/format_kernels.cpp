#include "cpu/kernels/format_kernels.h"

#include <algorithm>
#include <vector>

#include "base/check.h"
#include "base/cpu_features.h"
#include "cpu/kernels/simd_kernels.h"

namespace strata {
namespace {

using enum QuantType;

const SimdKernels kSimdKernels[] = {
    {.type = kF32, .dot_avx2 = vec_dot_f32_avx2},
    {.type = kF16, .quantize_avx2 = quantize_row_f16_avx2, .dot_avx2 = vec_dot_f16_avx2},
    {.type = kBF16, .dot_avx2 = vec_dot_bf16_avx2},
    {.type = kQ8_0,
     .quantize_avx2 = quantize_row_q8_0_avx2,
     .dot_avx2 = vec_dot_q8_0_avx2,
     .dot_rows_avx2 = vec_dot_rows_q8_0_avx2,
     .dot_rows_avx512 = vec_dot_rows_q8_0_avx512},
    {.type = kQ8_1, .quantize_avx2 = quantize_row_q8_1_avx2},
    {.type = kQ4_0,
     .dot_avx2 = vec_dot_q4_0_avx2,
     .dot_rows_avx2 = vec_dot_rows_q4_0_avx2,
     .dot_rows_avx512 = vec_dot_rows_q4_0_avx512},
    {.type = kQ4_1, .dot_avx2 = vec_dot_q4_1_avx2, .dot_rows_avx2 = vec_dot_rows_q4_1_avx2},
    {.type = kQ5_0, .dot_avx2 = vec_dot_q5_0_avx2, .dot_rows_avx2 = vec_dot_rows_q5_0_avx2},
    {.type = kQ5_1, .dot_avx2 = vec_dot_q5_1_avx2, .dot_rows_avx2 = vec_dot_rows_q5_1_avx2},
    {.type = kIQ4_NL, .dot_avx2 = vec_dot_iq4_nl_avx2, .dot_rows_avx2 = vec_dot_rows_iq4_nl_avx2},
    {.type = kIQ4_XS, .dot_avx2 = vec_dot_iq4_xs_avx2},
    {.type = kQ2_0,
     .dot_avx2 = vec_dot_q2_0_avx2,
     .dot_rows_avx2 = vec_dot_rows_q2_0_avx2,
     .dot_rows_avx512 = vec_dot_rows_q2_0_avx512},
    {.type = kQ2_K, .dot_avx2 = vec_dot_q2_k_avx2, .dot_avx512 = vec_dot_q2_k_avx512},
    {.type = kQ3_K, .dot_avx2 = vec_dot_q3_k_avx2},
    {.type = kQ4_K, .dot_avx2 = vec_dot_q4_k_avx2, .dot_avx512 = vec_dot_q4_k_avx512},
    {.type = kQ5_K, .dot_avx2 = vec_dot_q5_k_avx2, .dot_avx512 = vec_dot_q5_k_avx512},
    {.type = kQ6_K, .dot_avx2 = vec_dot_q6_k_avx2, .dot_avx512 = vec_dot_q6_k_avx512},
    {.type = kQ8_K, .quantize_avx2 = quantize_row_q8_k_avx2},
};

// The reference functions, replaced by each SIMD kernel this CPU runs.
FormatKernels choose(const QuantTraits& traits) {
  FormatKernels chosen{traits.quantize_row, traits.vec_dot_reference, nullptr};
  const SimdKernels* simd = find_simd_kernels(traits.type);
  if (simd == nullptr || simd_level() != SimdLevel::kAvx2) return chosen;
  if (simd->quantize_avx2) chosen.quantize_row = simd->quantize_avx2;
  if (simd->dot_avx2) chosen.vec_dot = simd->dot_avx2;
  chosen.vec_dot_rows = simd->dot_rows_avx2;
  if (!avx512_vnni()) return chosen;
  if (simd->dot_avx512) chosen.vec_dot = simd->dot_avx512;
  if (simd->dot_rows_avx512) chosen.vec_dot_rows = simd->dot_rows_avx512;
  return chosen;
}

}  // namespace

const SimdKernels* find_simd_kernels(QuantType type) {
  const auto* row = std::find_if(std::begin(kSimdKernels), std::end(kSimdKernels),
                                 [&](const SimdKernels& kernels) { return kernels.type == type; });
  return row == std::end(kSimdKernels) ? nullptr : row;
}

const FormatKernels& format_kernels(QuantType type) {
  // Indexed by type id: matrix products look their format up per call.
  static const std::vector<FormatKernels> by_id = [] {
    uint32_t max_id = 0;
    for (const QuantTraits& traits : all_quant_traits())
      max_id = std::max(max_id, uint32_t(traits.type));
    std::vector<FormatKernels> table(max_id + 1);
    for (const QuantTraits& traits : all_quant_traits())
      table[uint32_t(traits.type)] = choose(traits);
    return table;
  }();
  STRATA_CHECK_LT(uint32_t(type), by_id.size());
  const FormatKernels& kernels = by_id[uint32_t(type)];
  STRATA_CHECK(kernels.quantize_row != nullptr);
  return kernels;
}

}  // namespace strata
