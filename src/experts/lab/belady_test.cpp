#include "experts/lab/belady.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>
#include <random>

namespace strata {
namespace {

// The most hits any replacement can get, by trying every choice of what to keep: after each
// group the cache is the group plus any subset of what was there before that fits.
uint64_t optimal_hits(const std::vector<uint32_t>& accesses, const std::vector<uint32_t>& sizes,
                      size_t capacity) {
  std::map<uint32_t, uint64_t> best = {{0u, 0u}};  // cache (bit mask) -> most hits so far
  size_t begin = 0;
  for (uint32_t size : sizes) {
    uint32_t group = 0;
    for (size_t j = 0; j < size; ++j) group |= 1u << accesses[begin + j];
    begin += size;
    std::map<uint32_t, uint64_t> next;
    for (const auto& [cache, hits] : best) {
      const uint64_t now = hits + uint64_t(std::popcount(cache & group));
      const uint32_t others = cache & ~group;
      for (uint32_t kept = others;; kept = (kept - 1) & others) {
        if (size_t(std::popcount(kept | group)) <= capacity) {
          uint64_t& slot = next[kept | group];
          slot = std::max(slot, now);
        }
        if (kept == 0) break;
      }
    }
    best = std::move(next);
  }
  uint64_t most = 0;
  for (const auto& [cache, hits] : best) most = std::max(most, hits);
  return most;
}

uint64_t min_hits(const std::vector<uint32_t>& accesses, const std::vector<uint32_t>& sizes,
                  size_t capacity) {
  const auto hits = belady_hits(accesses, sizes, capacity);
  return std::accumulate(hits.begin(), hits.end(), uint64_t(0));
}

std::vector<uint32_t> same_sizes(size_t n, uint32_t size) {
  return std::vector<uint32_t>(n / size, size);
}

TEST(Belady, OptimalOnEveryShortTrace) {
  constexpr uint32_t kUnits = 4;
  constexpr int kLength = 8;
  std::vector<uint32_t> accesses(kLength, 0);
  for (uint32_t code = 0; code < (1u << (2 * kLength)); ++code) {
    for (int i = 0; i < kLength; ++i) accesses[size_t(i)] = (code >> (2 * i)) % kUnits;
    for (size_t capacity = 1; capacity <= 3; ++capacity)
      ASSERT_EQ(min_hits(accesses, same_sizes(kLength, 1), capacity),
                optimal_hits(accesses, same_sizes(kLength, 1), capacity))
          << "code " << code << " capacity " << capacity;
  }
}

TEST(Belady, OptimalWithGroupsThatMustBeResidentTogether) {
  // Every sequence of 4 pairs of distinct units out of 5.
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t a = 0; a < 5; ++a)
    for (uint32_t b = 0; b < 5; ++b)
      if (a != b) pairs.emplace_back(a, b);
  const size_t n = pairs.size();
  for (size_t code = 0; code < n * n * n * n; ++code) {
    std::vector<uint32_t> accesses;
    for (size_t rest = code, g = 0; g < 4; ++g, rest /= n) {
      accesses.push_back(pairs[rest % n].first);
      accesses.push_back(pairs[rest % n].second);
    }
    for (size_t capacity = 2; capacity <= 4; ++capacity)
      ASSERT_EQ(min_hits(accesses, same_sizes(8, 2), capacity),
                optimal_hits(accesses, same_sizes(8, 2), capacity))
          << "code " << code << " capacity " << capacity;
  }
}

TEST(Belady, OptimalOnLongerRandomTracesWithGroupsOfAnySize) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint32_t> accesses, sizes;
    for (int g = 0; g < 16; ++g) {
      std::vector<uint32_t> units(9);
      std::iota(units.begin(), units.end(), 0u);
      std::shuffle(units.begin(), units.end(), rng);
      // Skewed: low ids more often, as popular experts are.
      std::sort(units.begin(), units.begin() + 5);
      sizes.push_back(1 + rng() % 3);
      accesses.insert(accesses.end(), units.begin(), units.begin() + sizes.back());
    }
    for (size_t capacity = 3; capacity <= 6; ++capacity)
      ASSERT_EQ(min_hits(accesses, sizes, capacity), optimal_hits(accesses, sizes, capacity))
          << "trial " << trial << " capacity " << capacity;
  }
}

TEST(Belady, KnownSequence) {
  // The textbook reference string with 3 frames: MIN faults 9 times in 20 requests.
  const std::vector<uint32_t> accesses = {7, 0, 1, 2, 0, 3, 0, 4, 2, 3,
                                          0, 3, 2, 1, 2, 0, 1, 7, 0, 1};
  EXPECT_EQ(min_hits(accesses, same_sizes(accesses.size(), 1), 3), 11u);
}

}  // namespace
}  // namespace strata
