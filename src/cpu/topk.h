// Top-k selection for routers and samplers.
#pragma once

#include <cstdint>

namespace strata {

// Writes the indices of the k largest of values[0, n) to out, largest first; equal values are
// ordered by index (lower first), so the choice is deterministic. REQUIRES: 0 < k <= n.
void top_k(const float* values, int64_t n, int k, int32_t* out);

// The k best indices offered so far, best first, kept in `out` (insertion into a sorted list:
// cheap when most offers cannot enter). Indices must be offered in increasing order, which is
// what makes a tie with the k-th lose.
class TopKList {
 public:
  TopKList(int k, int32_t* out) : k_(k), out_(out) {}
  void offer(const float* values, int32_t index);
  bool full() const { return count_ == k_; }
  // REQUIRES: full(). The value an offer must exceed to enter.
  float bar(const float* values) const { return values[out_[k_ - 1]]; }

 private:
  int k_;
  int count_ = 0;
  int32_t* out_;
};

// top_k's scan for long inputs on AVX2: skips each block of 8 values none of which exceeds the
// bar with one comparison. Same result as offering every index in order.
void top_k_scan_avx2(const float* values, int64_t n, TopKList& list);

}  // namespace strata
