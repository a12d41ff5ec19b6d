#include "quant/q4_0_groups.h"

#include <cstring>

#include "base/cpu_features.h"
#include "base/fp16.h"
#include "quant/q4_0.h"

namespace strata {

bool groups_rows(QuantType type, int64_t n_rows) {
  return type == QuantType::kQ4_0 && n_rows % kQ4_0GroupRows == 0 && avx512_vnni();
}

void dequantize_grouped_q4_0_row(const uint8_t* rows, int64_t n, int64_t row, float* out) {
  const int64_t n_blocks = n / 32;
  const int r = int(row % kQ4_0GroupRows);
  const uint8_t* group =
      rows + size_t(row / kQ4_0GroupRows) * size_t(n_blocks) * kQ4_0GroupBlockBytes;
  for (int64_t b = 0; b < n_blocks; ++b) {
    BlockQ4_0 block;
    const uint8_t* source = group + size_t(b) * kQ4_0GroupBlockBytes;
    std::memcpy(&block.d, source + 2 * r, 2);
    std::memcpy(block.qs, source + 2 * kQ4_0GroupRows + 16 * r, 16);
    dequantize_row_q4_0(&block, out + 32 * b, 32);
  }
}

}  // namespace strata
