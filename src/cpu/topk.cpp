#include "cpu/topk.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "base/check.h"

namespace strata {

void top_k(const float* values, int64_t n, int k, int32_t* out) {
  STRATA_CHECK(k > 0 && k <= n);
  // Insertion into a sorted k-list: k is 4..8 for routers, and n is at most a few hundred.
  int count = 0;
  for (int32_t i = 0; i < int32_t(n); ++i) {
    const float v = values[i];
    if (count == k && !(v > values[out[k - 1]])) continue;
    int position = count < k ? count++ : k - 1;
    while (position > 0 && v > values[out[position - 1]]) {
      out[position] = out[position - 1];
      --position;
    }
    out[position] = i;
  }
}

}  // namespace strata
