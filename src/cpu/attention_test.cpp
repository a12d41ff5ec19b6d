#include "cpu/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "cpu/attention_kernels.h"

namespace strata {
namespace {

struct Case {
  int64_t n_head, n_head_kv, head_dim, n_ctx, pos0, n_tokens;
};

// Attention in double over plain [pos][head][dim] keys and values.
std::vector<double> reference(const Case& c, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v) {
  const int64_t group = c.n_head / c.n_head_kv;
  const double scale = 1.0 / std::sqrt(double(c.head_dim));
  std::vector<double> out(size_t(c.n_tokens * c.n_head * c.head_dim));
  for (int64_t t = 0; t < c.n_tokens; ++t)
    for (int64_t h = 0; h < c.n_head; ++h) {
      const int64_t n_pos = c.pos0 + t + 1, g = h / group;
      std::vector<double> p(static_cast<size_t>(n_pos), 0.0);
      double max = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n_pos; ++j) {
        double s = 0;
        for (int64_t d = 0; d < c.head_dim; ++d)
          s += double(q[size_t((t * c.n_head + h) * c.head_dim + d)]) *
               k[size_t((j * c.n_head_kv + g) * c.head_dim + d)];
        p[size_t(j)] = s * scale;
        max = std::max(max, p[size_t(j)]);
      }
      for (double& x : p) sum += x = std::exp(x - max);
      for (int64_t d = 0; d < c.head_dim; ++d) {
        double o = 0;
        for (int64_t j = 0; j < n_pos; ++j)
          o += p[size_t(j)] / sum * v[size_t((j * c.n_head_kv + g) * c.head_dim + d)];
        out[size_t((t * c.n_head + h) * c.head_dim + d)] = o;
      }
    }
  return out;
}

void check_case(const Case& c, int n_threads) {
  std::mt19937 rng(unsigned(c.n_head * 1000 + c.n_ctx + c.pos0));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t kv_dim = c.n_head_kv * c.head_dim, n_pos = c.pos0 + c.n_tokens;
  std::vector<float> q(size_t(c.n_tokens * c.n_head * c.head_dim)), k(size_t(n_pos * kv_dim)),
      v(size_t(n_pos * kv_dim));
  for (auto* x : {&q, &k, &v})
    for (float& value : *x) value = 2.0f * normal(rng);  // sharp softmaxes as well as flat ones

  const int64_t capacity = LayerKvView::capacity_for(c.n_ctx);
  std::vector<float> keys(size_t(kv_dim * capacity)), values(size_t(kv_dim * capacity));
  const LayerKvView kv{keys.data(), values.data(), c.n_ctx, capacity, c.n_head_kv, c.head_dim};
  for (int64_t j = 0; j < n_pos; ++j) kv.store(j, &k[size_t(j * kv_dim)], &v[size_t(j * kv_dim)]);

  const auto pool = ThreadPool::start(n_threads).value();
  AttentionScratch scratch;
  std::vector<float> out(q.size());
  const AttentionShape shape{c.n_head, c.n_head_kv, c.head_dim,
                             1.0f / std::sqrt(float(c.head_dim))};
  attention(*pool, shape, kv, q.data(), c.n_tokens, c.pos0, out.data(), scratch);
  const std::vector<double> expected = reference(c, q, k, v);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], expected[i], 2e-5 * (1 + std::abs(expected[i])))
        << "heads " << c.n_head << "/" << c.n_head_kv << " dim " << c.head_dim << " pos0 " << c.pos0
        << " tokens " << c.n_tokens << " index " << i;
}

const Case kCases[] = {
    {6, 2, 64, 40, 0, 1},       // first token
    {6, 2, 64, 40, 12, 1},      // decode, partial last tile
    {6, 2, 64, 40, 31, 1},      // decode, whole tiles
    {6, 2, 64, 41, 0, 41},      // prefill over a capacity that is not a tile multiple
    {32, 4, 128, 300, 257, 3},  // group of 8, split in two chunks of 4
    {10, 2, 16, 70, 50, 5},     // group of 5: chunks of 3 and 2
    {7, 7, 8, 20, 3, 9},        // no grouping
    {4, 1, 33, 24, 17, 2},      // odd head_dim
};

TEST(Attention, MatchesDoublePrecisionReference) {
  for (const Case& c : kCases) check_case(c, 2);
}

TEST(Attention, SameResultWithAnyThreadCount) {
  const Case c{12, 4, 64, 90, 60, 4};
  std::vector<std::vector<float>> outputs;
  for (int threads : {1, 2, 5}) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const int64_t kv_dim = c.n_head_kv * c.head_dim, n_pos = c.pos0 + c.n_tokens;
    const int64_t capacity = LayerKvView::capacity_for(c.n_ctx);
    std::vector<float> q(static_cast<size_t>(c.n_tokens * c.n_head * c.head_dim)),
        kvec(static_cast<size_t>(kv_dim));
    std::vector<float> keys(size_t(kv_dim * capacity)), values(keys.size());
    const LayerKvView kv{keys.data(), values.data(), c.n_ctx, capacity, c.n_head_kv, c.head_dim};
    for (int64_t j = 0; j < n_pos; ++j) {
      for (float& x : kvec) x = normal(rng);
      kv.store(j, kvec.data(), kvec.data());
    }
    for (float& x : q) x = normal(rng);
    const auto pool = ThreadPool::start(threads).value();
    AttentionScratch scratch;
    outputs.emplace_back(q.size());
    attention(*pool, {c.n_head, c.n_head_kv, c.head_dim, 0.125f}, kv, q.data(), c.n_tokens, c.pos0,
              outputs.back().data(), scratch);
  }
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(outputs[0], outputs[2]);
}

// attention() runs one kernel set per machine; this checks the other against it, step by step.
TEST(Attention, ScalarAndAvx2KernelsAgree) {
  if (simd_level() != SimdLevel::kAvx2) GTEST_SKIP() << "no AVX2 on this machine";
  const AttentionKernels* sets[] = {&attention_kernels_scalar(), &attention_kernels_avx2()};
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int n_heads = 1; n_heads <= kMaxHeadsTogether; ++n_heads)
    for (int64_t n_pos : {1, 7, 8, 9, 23, 64}) {
      const int64_t head_dim = 24, capacity = LayerKvView::capacity_for(n_pos);
      std::vector<float> q(size_t(n_heads * head_dim)), keys(size_t(capacity * head_dim)),
          values(keys.size());
      for (auto* x : {&q, &keys, &values})
        for (float& value : *x) value = normal(rng);
      std::vector<float> scores[2], out[2];
      for (int s = 0; s < 2; ++s) {
        scores[s].assign(size_t(n_heads * capacity), 0.0f);
        out[s].assign(q.size(), 0.0f);
        sets[s]->key_scores(q.data(), n_heads, keys.data(), head_dim, n_pos, 0.5f, scores[s].data(),
                            capacity);
        sets[s]->softmax_rows(scores[s].data(), n_heads, n_pos, capacity);
        sets[s]->weighted_values(scores[s].data(), n_heads, capacity, values.data(), capacity,
                                 head_dim, n_pos, out[s].data());
      }
      for (int h = 0; h < n_heads; ++h)
        for (int64_t j = 0; j < n_pos; ++j)
          ASSERT_NEAR(scores[0][size_t(h * capacity + j)], scores[1][size_t(h * capacity + j)],
                      1e-6)
              << n_heads << " heads, " << n_pos << " positions";
      for (size_t i = 0; i < q.size(); ++i)
        ASSERT_NEAR(out[0][i], out[1][i], 1e-5) << n_heads << " heads, " << n_pos << " positions";
    }
}

// The AVX-512 kernels promise the AVX2 kernels' bits: every output of every step, over whole
// and partial key tiles, head dimensions with and without a tail past the last 32, and every
// number of heads at once.
TEST(Attention, Avx512KernelsEqualAvx2ToTheBit) {
  if (!avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this machine";
  const AttentionKernels* sets[] = {&attention_kernels_avx2(), &attention_kernels_avx512()};
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int n_heads = 1; n_heads <= kMaxHeadsTogether; ++n_heads)
    for (int64_t head_dim : {24, 33, 64, 128})
      for (int64_t n_pos : {1, 7, 8, 9, 15, 16, 17, 31, 33, 100}) {
        const int64_t capacity = LayerKvView::capacity_for(n_pos + 5);
        std::vector<float> q(size_t(n_heads * head_dim)), keys(size_t(capacity * head_dim)),
            values(keys.size());
        for (auto* x : {&q, &keys, &values})
          for (float& value : *x) value = 2.0f * normal(rng);
        std::vector<float> scores[2], out[2];
        for (int s = 0; s < 2; ++s) {
          scores[s].assign(size_t(n_heads * capacity), 0.0f);
          out[s].assign(q.size(), 0.0f);
          sets[s]->key_scores(q.data(), n_heads, keys.data(), head_dim, n_pos, 0.125f,
                              scores[s].data(), capacity);
        }
        ASSERT_EQ(scores[0], scores[1]) << n_heads << " heads, dim " << head_dim << ", " << n_pos;
        for (int s = 0; s < 2; ++s) {
          sets[s]->softmax_rows(scores[s].data(), n_heads, n_pos, capacity);
          sets[s]->weighted_values(scores[s].data(), n_heads, capacity, values.data(), capacity,
                                   head_dim, n_pos, out[s].data());
        }
        ASSERT_EQ(out[0], out[1]) << n_heads << " heads, dim " << head_dim << ", " << n_pos;
      }
}

// Decode of small models computes each KV head's group inside one task (model/transformer.cpp):
// the same bits as attention() over the pool, with groups larger than the kernels take.
TEST(Attention, HeadsHereEqualAttentionToTheBit) {
  for (const Case c : {Case{6, 2, 64, 40, 12, 1}, Case{32, 4, 128, 70, 66, 1}}) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    const int64_t kv_dim = c.n_head_kv * c.head_dim, q_dim = c.n_head * c.head_dim;
    const int64_t capacity = LayerKvView::capacity_for(c.n_ctx);
    std::vector<float> keys(static_cast<size_t>(kv_dim * capacity)), values(keys.size()),
        k(static_cast<size_t>(kv_dim)), v(k.size()), q(static_cast<size_t>(q_dim));
    const LayerKvView kv{keys.data(), values.data(), c.n_ctx, capacity, c.n_head_kv, c.head_dim};
    for (int64_t j = 0; j <= c.pos0; ++j) {
      for (auto* x : {&k, &v})
        for (float& value : *x) value = normal(rng);
      if (j < c.pos0) {
        kv.store(j, k.data(), v.data());
      } else {
        for (int64_t h = 0; h < c.n_head_kv; ++h)
          kv.store_head(j, h, k.data() + h * c.head_dim, v.data() + h * c.head_dim);
      }
    }
    for (float& value : q) value = normal(rng);
    const AttentionShape shape{c.n_head, c.n_head_kv, c.head_dim,
                               1.0f / std::sqrt(float(c.head_dim))};
    const auto pool = ThreadPool::start(2).value();
    AttentionScratch scratch;
    std::vector<float> by_pool(q.size()), here(q.size());
    attention(*pool, shape, kv, q.data(), 1, c.pos0, by_pool.data(), scratch);
    for (int64_t h = 0; h < c.n_head_kv; ++h)
      attention_heads_here(shape, kv, q.data(), c.pos0, h, here.data(), scratch.scores[0].data());
    EXPECT_EQ(0, std::memcmp(by_pool.data(), here.data(), q.size() * sizeof(float)))
        << c.n_head << "/" << c.n_head_kv << " heads";
  }
}

}  // namespace
}  // namespace strata
