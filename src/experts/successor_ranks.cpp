#include "experts/successor_ranks.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "base/check.h"

namespace strata {
namespace {

int rank_bucket(int rank) {
  if (rank < 8) return rank;
  const int octave = int(std::bit_width(unsigned(rank))) - 4;  // 8-15: 0, 16-31: 1, ...
  const bool upper_half = rank >= 3 << (octave + 2);
  return std::min(8 + 2 * octave + int(upper_half), SuccessorRanks::kBuckets - 1);
}

}  // namespace

SuccessorRanks::SuccessorRanks(int n_layer, int n_expert) : n_layer_(n_layer), n_expert_(n_expert) {
  STRATA_CHECK(n_layer >= 1 && n_expert >= 1);
  follows_.assign(size_t(n_layer) * size_t(n_expert) * size_t(n_expert), 0.0f);
  visits_with_.assign(size_t(n_layer) * size_t(n_expert), 0.0f);
  previous_.resize(size_t(n_layer));
  buckets_.assign(size_t(n_layer) * size_t(n_expert), int8_t(-1));
}

uint64_t SuccessorRanks::bytes_for(int n_layer, int n_expert) {
  const uint64_t units = uint64_t(n_layer) * uint64_t(n_expert);
  return units * uint64_t(n_expert) * sizeof(float) + units * (sizeof(float) + sizeof(int8_t)) +
         uint64_t(n_layer) * sizeof(std::vector<int32_t>);
}

void SuccessorRanks::observe(int layer, std::span<const int32_t> used, bool follows_previous) {
  STRATA_CHECK(layer >= 0 && layer < n_layer_);
  const size_t n = size_t(n_expert_);
  float* follows = follows_.data() + size_t(layer) * n * n;
  float* visits_with = visits_with_.data() + size_t(layer) * n;
  std::vector<int32_t>& previous = previous_[size_t(layer)];
  if (follows_previous) {
    for (int32_t e : previous) {
      visits_with[e] += 1;
      for (int32_t f : used) follows[size_t(e) * n + size_t(f)] += 1;
    }
  }
  previous.assign(used.begin(), used.end());
  std::vector<double> score(n, 0.0);
  for (int32_t e : used) {
    STRATA_CHECK(e >= 0 && e < n_expert_);
    const double weight = 1.0 / (double(visits_with[e]) + 1);
    for (size_t f = 0; f < n; ++f) score[f] += follows[size_t(e) * n + f] * weight;
  }
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return score[size_t(a)] > score[size_t(b)] || (score[size_t(a)] == score[size_t(b)] && a < b);
  });
  int8_t* buckets = buckets_.data() + size_t(layer) * n;
  for (size_t rank = 0; rank < n; ++rank) buckets[order[rank]] = int8_t(rank_bucket(int(rank)));
}

void SuccessorRanks::invalidate(int layer) {
  STRATA_CHECK(layer >= 0 && layer < n_layer_);
  std::fill_n(buckets_.begin() + ptrdiff_t(layer) * n_expert_, n_expert_, int8_t(-1));
}

int SuccessorRanks::bucket(int layer, int expert) const {
  return buckets_[size_t(layer) * size_t(n_expert_) + size_t(expert)];
}

}  // namespace strata
