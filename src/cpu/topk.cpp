#include "cpu/topk.h"

#include "base/check.h"
#include "base/cpu_features.h"

namespace strata {
namespace {

// k <= 8 for routers over a few hundred values; k ~40 for samplers over a vocabulary of
// 16k-152k, where the AVX2 scan skips the blocks of 8 that cannot enter in one comparison.
constexpr int64_t kVectorScanFrom = 256;

}  // namespace

void TopKList::offer(const float* values, int32_t index) {
  const float v = values[index];
  if (count_ == k_ && !(v > values[out_[k_ - 1]])) return;
  int position = count_ < k_ ? count_++ : k_ - 1;
  while (position > 0 && v > values[out_[position - 1]]) {
    out_[position] = out_[position - 1];
    --position;
  }
  out_[position] = index;
}

void top_k(const float* values, int64_t n, int k, int32_t* out) {
  STRATA_CHECK(k > 0 && k <= n);
  TopKList list(k, out);
  if (n >= kVectorScanFrom && simd_level() == SimdLevel::kAvx2) {
    top_k_scan_avx2(values, n, list);
    return;
  }
  for (int32_t i = 0; i < int32_t(n); ++i) list.offer(values, i);
}

}  // namespace strata
