// run_matmuls on grouped Q4_0 rows (quant/q4_0_groups.h): a token's outputs have the same bits
// however many tokens a call computes, and a matrix still in the file's layout with
// group_before_use is grouped in place by the call (each tile its rows, or a pass first when
// several token tiles share them) and gives the grouped matrix's results.
#include "cpu/matmul.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "quant/q4_0.h"
#include "quant/q4_0_groups.h"

namespace strata {
namespace {

constexpr int64_t kIn = 256, kOut = 96;

struct Problem {
  std::vector<uint8_t> file_layout, grouped;
  std::vector<float> x;  // [n_tokens][kIn]
};

Problem make_problem(int64_t n_tokens) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> weights(size_t(kIn * kOut));
  for (auto& w : weights) w = normal(rng);
  Problem p;
  p.file_layout.resize(size_t(kOut) * quant_traits(QuantType::kQ4_0).row_bytes(kIn));
  quantize_row_q4_0(weights.data(), p.file_layout.data(), kIn * kOut);
  p.grouped = p.file_layout;
  group_q4_0_rows(p.grouped.data(), kIn, kOut);
  p.x.resize(size_t(n_tokens * kIn));
  for (auto& v : p.x) v = normal(rng);
  return p;
}

std::vector<float> product(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens) {
  std::vector<float> y(size_t(n_tokens * kOut));
  ConvertedRows scratch;
  matmul(pool, w, x, n_tokens, y.data(), scratch);
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(GroupedMatmul, TokenBitsDoNotDependOnBatch) {
  if (!avx512_vnni()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI (or STRATA_SIMD keeps to AVX2)";
  const int64_t n_tokens = 100;  // two token tiles
  const Problem p = make_problem(n_tokens);
  ThreadPool pool(2);
  const Matrix w{QuantType::kQ4_0, p.grouped.data(), kIn, kOut, true};
  const auto all = product(pool, w, p.x.data(), n_tokens);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto one = product(pool, w, p.x.data() + t * kIn, 1);
    ASSERT_TRUE(same_bits(one, {all.begin() + t * kOut, all.begin() + (t + 1) * kOut}))
        << "token " << t;
  }
  // And they are the file layout's products, to rounding.
  const Matrix plain{QuantType::kQ4_0, p.file_layout.data(), kIn, kOut};
  const auto reference = product(pool, plain, p.x.data(), n_tokens);
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_NEAR(all[i], reference[i], 1e-4f * (1.0f + std::fabs(reference[i]))) << i;
}

TEST(GroupedMatmul, GroupsBeforeUseInPlace) {
  if (!avx512_vnni()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI (or STRATA_SIMD keeps to AVX2)";
  for (int64_t n_tokens : {0, 1, 5, 100}) {  // tiles group their rows; 0 and 100: a pass first
    Problem p = make_problem(n_tokens);
    ThreadPool pool(2);
    const Matrix grouped{QuantType::kQ4_0, p.grouped.data(), kIn, kOut, true};
    const auto want = product(pool, grouped, p.x.data(), n_tokens);
    const Matrix to_group{QuantType::kQ4_0, p.file_layout.data(), kIn, kOut, true, true};
    EXPECT_TRUE(same_bits(want, product(pool, to_group, p.x.data(), n_tokens)))
        << n_tokens << " tokens";
    EXPECT_EQ(p.file_layout, p.grouped) << n_tokens << " tokens";
  }
}

}  // namespace
}  // namespace strata
