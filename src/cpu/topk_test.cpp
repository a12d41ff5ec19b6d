#include "cpu/topk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace strata {
namespace {

// top_k of `values` must give the first k indices of a stable sort by value, descending.
void expect_stable_sort_order(const std::vector<float>& values, int k, int trial) {
  std::vector<int32_t> expected(values.size());
  std::iota(expected.begin(), expected.end(), 0);
  std::stable_sort(expected.begin(), expected.end(),
                   [&](int32_t a, int32_t b) { return values[a] > values[b]; });
  std::vector<int32_t> got(static_cast<size_t>(k));
  top_k(values.data(), int64_t(values.size()), k, got.data());
  for (int i = 0; i < k; ++i) ASSERT_EQ(got[i], expected[i]) << "trial " << trial << " i " << i;
}

TEST(TopK, MatchesStableSortOnRandomInputsWithTies) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + int(rng() % 200);
    const int k = 1 + int(rng() % std::min(n, 16));
    std::vector<float> values(static_cast<size_t>(n));
    for (auto& v : values) v = float(int(rng() % 20)) * 0.5f;  // many ties
    expect_stable_sort_order(values, k, trial);
  }
}

// Vocabulary-sized inputs take the AVX2 scan where the CPU has it.
TEST(TopK, LongInputsMatchStableSort) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 256 + int(rng() % 20000);
    const int k = 1 + int(rng() % 64);
    std::vector<float> values(static_cast<size_t>(n));
    for (auto& v : values) v = float(int(rng() % 500)) * 0.25f;  // ties
    expect_stable_sort_order(values, k, trial);
  }
}

}  // namespace
}  // namespace strata
