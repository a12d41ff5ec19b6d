#include "cpu/kernels/q4_0_groups.h"

#include <cstring>
#include <vector>

#include "base/check.h"
#include "base/cpu_features.h"
#include "base/fp16.h"
#include "quant/q4_0.h"

namespace strata {

namespace {

// Grouped, block b of a group's row r keeps its scale at byte 2 * r of the group's block b and
// its quants at byte 16 + 16 * r. A group at a time, through a copy: the two orders overlap.
void reorder_groups(uint8_t* rows, int64_t n, int64_t n_rows, bool to_groups) {
  STRATA_CHECK_EQ(n_rows % kQ4_0GroupRows, 0);
  const int64_t n_blocks = n / 32;
  const size_t row_bytes = size_t(n_blocks) * sizeof(BlockQ4_0);
  const size_t group_bytes = kQ4_0GroupRows * row_bytes;
  std::vector<uint8_t> copy(group_bytes);
  for (int64_t first = 0; first < n_rows; first += kQ4_0GroupRows) {
    uint8_t* group = rows + size_t(first) * row_bytes;
    std::memcpy(copy.data(), group, group_bytes);
    for (int r = 0; r < kQ4_0GroupRows; ++r) {
      for (int64_t b = 0; b < n_blocks; ++b) {
        const size_t plain = size_t(r) * row_bytes + size_t(b) * sizeof(BlockQ4_0);
        const size_t grouped = size_t(b) * kQ4_0GroupBlockBytes;
        const size_t scale = grouped + 2 * size_t(r);
        const size_t quants = grouped + 2 * kQ4_0GroupRows + 16 * size_t(r);
        if (to_groups) {
          std::memcpy(group + scale, copy.data() + plain, 2);
          std::memcpy(group + quants, copy.data() + plain + 2, 16);
        } else {
          std::memcpy(group + plain, copy.data() + scale, 2);
          std::memcpy(group + plain + 2, copy.data() + quants, 16);
        }
      }
    }
  }
}

}  // namespace

bool has_row_groups(QuantType type, int64_t n_rows) {
  return type == QuantType::kQ4_0 && n_rows % kQ4_0GroupRows == 0;
}

bool groups_rows(QuantType type, int64_t n_rows) {
  return has_row_groups(type, n_rows) && avx512_vnni();
}

void group_q4_0_rows(uint8_t* rows, int64_t n, int64_t n_rows) {
  if (avx512_vnni()) return group_q4_0_rows_avx512(rows, n, n_rows);
  reorder_groups(rows, n, n_rows, /*to_groups=*/true);
}

void ungroup_q4_0_rows(uint8_t* rows, int64_t n, int64_t n_rows) {
  reorder_groups(rows, n, n_rows, /*to_groups=*/false);
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
