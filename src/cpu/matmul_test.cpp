// run_matmuls on grouped Q4_0 rows (cpu/kernels/q4_0_groups.h): a token's outputs have the same
// bits however many tokens a call computes, and a matrix still in the file's layout with
// rearrange_before_use is grouped in place by the call (each tile its rows, or a pass first when
// several token tiles share them) and gives the grouped matrix's results; grouped bytes of a
// matrix computed ungrouped are ungrouped in place (on any CPU: the fallback where AVX-512 VNNI
// is missing). run_matmul_here (one job on the calling thread) gives run_matmuls' bits, for
// plain and grouped rows.
#include "cpu/matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <vector>

#include "base/cpu_features.h"
#include "cpu/kernels/q4_0_groups.h"
#include "quant/q4_0.h"

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

// Byte spans, not memcmp: an empty product (0 tokens) has no data pointer to pass.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return std::ranges::equal(std::as_bytes(std::span(a)), std::as_bytes(std::span(b)));
}

TEST(GroupedMatmul, TokenBitsDoNotDependOnBatch) {
  if (!avx512_vnni()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI (or STRATA_SIMD keeps to AVX2)";
  const int64_t n_tokens = 100;  // two token tiles
  const Problem p = make_problem(n_tokens);
  const auto pool = ThreadPool::start(2).value();
  const Matrix w{QuantType::kQ4_0, p.grouped.data(), kIn, kOut, true};
  const auto all = product(*pool, w, p.x.data(), n_tokens);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto one = product(*pool, w, p.x.data() + t * kIn, 1);
    ASSERT_TRUE(same_bits(one, {all.begin() + t * kOut, all.begin() + (t + 1) * kOut}))
        << "token " << t;
  }
  // And they are the file layout's products, to rounding.
  const Matrix plain{QuantType::kQ4_0, p.file_layout.data(), kIn, kOut};
  const auto reference = product(*pool, plain, p.x.data(), n_tokens);
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_NEAR(all[i], reference[i], 1e-4f * (1.0f + std::fabs(reference[i]))) << i;
}

TEST(GroupedMatmul, GroupsBeforeUseInPlace) {
  if (!avx512_vnni()) GTEST_SKIP() << "CPU lacks AVX-512 VNNI (or STRATA_SIMD keeps to AVX2)";
  for (int64_t n_tokens : {0, 1, 5, 100}) {  // tiles group their rows; 0 and 100: a pass first
    Problem p = make_problem(n_tokens);
    const auto pool = ThreadPool::start(2).value();
    const Matrix grouped{QuantType::kQ4_0, p.grouped.data(), kIn, kOut, true};
    const auto want = product(*pool, grouped, p.x.data(), n_tokens);
    const Matrix to_group{QuantType::kQ4_0, p.file_layout.data(), kIn, kOut, true, true};
    EXPECT_TRUE(same_bits(want, product(*pool, to_group, p.x.data(), n_tokens)))
        << n_tokens << " tokens";
    EXPECT_EQ(p.file_layout, p.grouped) << n_tokens << " tokens";
  }
}

TEST(Matmul, UngroupsBeforeUseInPlace) {
  for (int64_t n_tokens : {0, 1, 5, 100}) {
    Problem p = make_problem(n_tokens);
    const auto pool = ThreadPool::start(2).value();
    const Matrix plain{QuantType::kQ4_0, p.file_layout.data(), kIn, kOut};
    const auto want = product(*pool, plain, p.x.data(), n_tokens);
    const Matrix to_ungroup{QuantType::kQ4_0, p.grouped.data(), kIn, kOut, false, true};
    EXPECT_TRUE(same_bits(want, product(*pool, to_ungroup, p.x.data(), n_tokens)))
        << n_tokens << " tokens";
    EXPECT_EQ(p.grouped, p.file_layout) << n_tokens << " tokens";
  }
}

// A whole matrix, or rows of it (a KV head's group), computed by one thread inside a task.
TEST(Matmul, HereEqualsThePoolsTasksToTheBit) {
  const Problem p = make_problem(100);
  const auto pool = ThreadPool::start(3).value();
  std::vector<Matrix> matrices = {{QuantType::kQ4_0, p.file_layout.data(), kIn, kOut}};
  if (avx512_vnni()) matrices.push_back({QuantType::kQ4_0, p.grouped.data(), kIn, kOut, true});
  for (const Matrix& full : matrices)
    for (int64_t n_tokens : {1, 5, 100}) {
      ConvertedRows x;
      reshape_rows(x, quant_traits(full.type).vec_dot_type, n_tokens, kIn);
      convert_rows(*pool, p.x.data(), kIn, 0, n_tokens, x);
      for (auto [first, count] : {std::pair<int64_t, int64_t>{0, kOut}, {32, 16}}) {
        const Matrix w{full.type, full.row(first), kIn, count, full.grouped_rows};
        std::vector<float> by_pool(size_t(n_tokens * count)), here(by_pool.size());
        const MatmulJob pool_job{&w, &x, 0, n_tokens, by_pool.data(), count};
        run_matmuls(*pool, {&pool_job, 1});
        run_matmul_here({&w, &x, 0, n_tokens, here.data(), count});
        EXPECT_TRUE(same_bits(by_pool, here))
            << (full.grouped_rows ? "grouped" : "plain") << ", " << n_tokens << " tokens, rows "
            << first << "+" << count;
      }
    }
}

}  // namespace
}  // namespace strata
