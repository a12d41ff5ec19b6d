#include "quant/q4_0_groups.h"

#include <cstring>
#include <vector>

#include "base/check.h"
#include "base/cpu_features.h"
#include "base/fp16.h"
#include "quant/q4_0.h"

namespace strata {

bool groups_rows(QuantType type, int64_t n_rows) {
  return type == QuantType::kQ4_0 && n_rows % kQ4_0GroupRows == 0 && avx512_vnni();
}

void group_q4_0_rows(uint8_t* rows, int64_t n, int64_t n_rows) {
  STRATA_CHECK_EQ(n_rows % kQ4_0GroupRows, 0);
  const int64_t n_blocks = n / 32;
  const size_t row_bytes = size_t(n_blocks) * sizeof(BlockQ4_0);
  const size_t group_bytes = kQ4_0GroupRows * row_bytes;
  // One group at a time through a copy: the group keeps its place and size.
  thread_local std::vector<uint8_t> copy;
  copy.resize(group_bytes);
  for (int64_t first = 0; first < n_rows; first += kQ4_0GroupRows) {
    uint8_t* group = rows + size_t(first) * row_bytes;
    std::memcpy(copy.data(), group, group_bytes);
    for (int64_t b = 0; b < n_blocks; ++b) {
      uint8_t* out = group + size_t(b) * kQ4_0GroupBlockBytes;
      for (int r = 0; r < kQ4_0GroupRows; ++r) {
        const uint8_t* block = copy.data() + size_t(r) * row_bytes + size_t(b) * sizeof(BlockQ4_0);
        std::memcpy(out + 2 * r, block + offsetof(BlockQ4_0, d), 2);
        std::memcpy(out + 2 * kQ4_0GroupRows + 16 * r, block + offsetof(BlockQ4_0, qs), 16);
      }
    }
  }
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
