#include "base/check.h"
#include "gguf/tensor_types.h"
#include "quant/bf16.h"
#include "quant/f16.h"
#include "quant/f32.h"
#include "quant/iq4_nl.h"
#include "quant/iq4_xs.h"
#include "quant/q2_0.h"
#include "quant/q2_k.h"
#include "quant/q3_k.h"
#include "quant/q4_0.h"
#include "quant/q4_1.h"
#include "quant/q4_k.h"
#include "quant/q5_0.h"
#include "quant/q5_1.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/q8_k.h"
#include "quant/quant_type.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

namespace strata {
namespace {

#define STRATA_FORMAT_ROW(Type, lower, Block, block_size, DotType)             \
  QuantTraits {                                                                \
    QuantType::Type, #lower, block_size, sizeof(Block), QuantType::DotType,    \
        dequantize_row_##lower, quantize_row_##lower, vec_dot_##lower##_scalar \
  }
#define STRATA_ACTIVATION_ROW(Type, lower, Block, block_size)                                    \
  QuantTraits {                                                                                  \
    QuantType::Type, #lower, block_size, sizeof(Block), QuantType::Type, dequantize_row_##lower, \
        quantize_row_##lower, nullptr                                                            \
  }

const std::array kTraits = {
    STRATA_FORMAT_ROW(kF32, f32, float, 1, kF32),
    STRATA_FORMAT_ROW(kF16, f16, uint16_t, 1, kF16),
    STRATA_FORMAT_ROW(kBF16, bf16, uint16_t, 1, kBF16),
    STRATA_FORMAT_ROW(kQ8_0, q8_0, BlockQ8_0, 32, kQ8_0),
    STRATA_FORMAT_ROW(kQ4_0, q4_0, BlockQ4_0, 32, kQ8_0),
    STRATA_FORMAT_ROW(kQ4_1, q4_1, BlockQ4_1, 32, kQ8_1),
    STRATA_FORMAT_ROW(kQ5_0, q5_0, BlockQ5_0, 32, kQ8_0),
    STRATA_FORMAT_ROW(kQ5_1, q5_1, BlockQ5_1, 32, kQ8_1),
    STRATA_FORMAT_ROW(kIQ4_NL, iq4_nl, BlockIQ4_NL, 32, kQ8_0),
    STRATA_FORMAT_ROW(kQ2_0, q2_0, BlockQ2_0, 64, kQ8_0),
    STRATA_FORMAT_ROW(kIQ4_XS, iq4_xs, BlockIQ4_XS, 256, kQ8_K),
    STRATA_FORMAT_ROW(kQ2_K, q2_k, BlockQ2_K, 256, kQ8_K),
    STRATA_FORMAT_ROW(kQ3_K, q3_k, BlockQ3_K, 256, kQ8_K),
    STRATA_FORMAT_ROW(kQ4_K, q4_k, BlockQ4_K, 256, kQ8_K),
    STRATA_FORMAT_ROW(kQ5_K, q5_k, BlockQ5_K, 256, kQ8_K),
    STRATA_FORMAT_ROW(kQ6_K, q6_k, BlockQ6_K, 256, kQ8_K),
    STRATA_ACTIVATION_ROW(kQ8_1, q8_1, BlockQ8_1, 32),
    STRATA_ACTIVATION_ROW(kQ8_K, q8_k, BlockQ8_K, 256),
};

#undef STRATA_FORMAT_ROW
#undef STRATA_ACTIVATION_ROW

// The geometry in the GGUF layer's table and our block structs must agree.
bool geometry_matches_gguf() {
  for (const auto& row : kTraits) {
    const auto* info = gguf::find_tensor_type(uint32_t(row.type));
    if (!info || info->block_size != row.block_size || info->type_size != int64_t(row.block_bytes))
      return false;
  }
  return true;
}

}  // namespace

std::span<const QuantTraits> all_quant_traits() { return kTraits; }

const QuantTraits* find_quant_traits(uint32_t ggml_type_id) {
  // Indexed by type id: the kernels' callers look their format up per task.
  static const std::vector<const QuantTraits*> by_id = [] {
    STRATA_CHECK(geometry_matches_gguf());
    uint32_t max_id = 0;
    for (const auto& row : kTraits) max_id = std::max(max_id, uint32_t(row.type));
    std::vector<const QuantTraits*> index(max_id + 1, nullptr);
    for (const auto& row : kTraits) index[uint32_t(row.type)] = &row;
    return index;
  }();
  return ggml_type_id < by_id.size() ? by_id[ggml_type_id] : nullptr;
}

const QuantTraits& quant_traits(QuantType type) {
  const QuantTraits* row = find_quant_traits(uint32_t(type));
  STRATA_CHECK(row != nullptr);
  return *row;
}

Result<QuantType> parse_quant_type(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  for (const auto& row : kTraits)
    if (row.name == lower && row.vec_dot_reference) return row.type;
  return Status::errorf("unknown tensor format '{}' (try f32, f16, bf16, q8_0, q4_0, q4_k, ...)",
                        name);
}

}  // namespace strata
