#include "experts/lab/cache_simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "experts/replacement_policy.h"

namespace strata {
namespace {

ExpertTrace random_trace(uint32_t n_layer, uint32_t n_expert, uint32_t k, uint64_t n_tokens,
                         uint64_t n_prompt, uint32_t seed) {
  std::mt19937 rng(seed);
  ExpertTrace t;
  t.n_layer = n_layer;
  t.n_expert = n_expert;
  t.n_expert_used = k;
  t.n_prompt_tokens = n_prompt;
  for (uint64_t token = 0; token < n_tokens; ++token) {
    for (uint32_t layer = 0; layer < n_layer; ++layer) {
      std::vector<uint16_t> experts(n_expert);
      std::iota(experts.begin(), experts.end(), uint16_t(0));
      // Skewed: each expert's weight is a random power, so a few are popular.
      std::vector<double> score(n_expert);
      for (uint32_t e = 0; e < n_expert; ++e)
        score[e] = std::pow(double(rng() % 1000 + 1) / 1000.0, 1.0 / double(e + 1));
      std::sort(experts.begin(), experts.end(),
                [&](uint16_t a, uint16_t b) { return score[a] > score[b]; });
      t.experts.insert(t.experts.end(), experts.begin(), experts.begin() + k);
    }
  }
  return t;
}

struct NaiveGroup {
  std::set<uint32_t> units;
  bool prompt;
};

// The groups a trace asks for: per token and layer its experts; with chunk > 0, the prompt's
// per chunk and layer the union of the chunk's experts, cut into pieces of `capacity` units.
std::vector<NaiveGroup> naive_groups(const ExpertTrace& t, uint64_t chunk, size_t capacity) {
  std::vector<NaiveGroup> groups;
  const uint64_t first_single = chunk > 0 ? t.n_prompt_tokens : 0;
  for (uint64_t begin = 0; begin < first_single; begin += chunk) {
    for (uint32_t layer = 0; layer < t.n_layer; ++layer) {
      std::set<uint32_t> union_of_chunk;
      for (uint64_t token = begin; token < std::min(begin + chunk, first_single); ++token)
        for (uint16_t e : t.picks(token, layer)) union_of_chunk.insert(layer * t.n_expert + e);
      const std::vector<uint32_t> all(union_of_chunk.begin(), union_of_chunk.end());
      for (size_t at = 0; at < all.size(); at += capacity)
        groups.push_back({{all.begin() + ptrdiff_t(at),
                           all.begin() + ptrdiff_t(std::min(at + capacity, all.size()))},
                          true});
    }
  }
  for (uint64_t token = first_single; token < t.n_tokens(); ++token) {
    for (uint32_t layer = 0; layer < t.n_layer; ++layer) {
      groups.push_back({{}, token < t.n_prompt_tokens});
      for (uint16_t e : t.picks(token, layer)) groups.back().units.insert(layer * t.n_expert + e);
    }
  }
  return groups;
}

// Group-aware LRU written as plainly as possible: a timestamp per resident unit; a group's
// resident units are used first, then the missing ones come in by ascending id, each evicting
// the oldest resident unit the group does not need.
CacheRun naive_lru(const std::vector<NaiveGroup>& groups, size_t capacity) {
  std::map<uint32_t, uint64_t> stamp;
  uint64_t clock = 0;
  CacheRun run;
  for (const NaiveGroup& group : groups) {
    CacheCounts& counts = group.prompt ? run.prompt : run.generated;
    std::vector<uint32_t> missing;
    for (uint32_t unit : group.units) {
      ++counts.accesses;
      if (stamp.count(unit)) {
        ++counts.hits;
        stamp[unit] = ++clock;
      } else {
        missing.push_back(unit);
      }
    }
    for (uint32_t unit : missing) {
      if (stamp.size() == capacity) {
        uint32_t oldest = 0;
        uint64_t oldest_stamp = UINT64_MAX;
        for (const auto& [u, s] : stamp)
          if (!group.units.count(u) && s < oldest_stamp) oldest = u, oldest_stamp = s;
        stamp.erase(oldest);
      }
      stamp[unit] = ++clock;
    }
  }
  return run;
}

TEST(CacheSimulator, LruReplayMatchesANaiveModel) {
  for (uint32_t seed = 0; seed < 40; ++seed) {
    const ExpertTrace t = random_trace(3, 8, 3, 60, 20, seed);
    for (size_t capacity : {3, 4, 7, 12, 24}) {
      const auto got = replay(t, "lru", {capacity, false, 0});
      ASSERT_TRUE(got.ok());
      const CacheRun want = naive_lru(naive_groups(t, 0, capacity), capacity);
      EXPECT_EQ(got->prompt.hits, want.prompt.hits) << seed << " " << capacity;
      EXPECT_EQ(got->generated.hits, want.generated.hits) << seed << " " << capacity;
      EXPECT_EQ(got->prompt.accesses, 20u * 3 * 3);
      EXPECT_EQ(got->generated.accesses, 40u * 3 * 3);
    }
  }
}

TEST(CacheSimulator, ChunkedPrefillMatchesANaiveModel) {
  for (uint32_t seed = 0; seed < 40; ++seed) {
    const ExpertTrace t = random_trace(3, 8, 3, 60, 25, seed);
    for (uint64_t chunk : {1, 4, 10, 25, 100}) {
      for (size_t capacity : {3, 5, 7, 12, 24}) {
        const auto got = replay(t, "lru", {capacity, false, chunk});
        ASSERT_TRUE(got.ok());
        const CacheRun want = naive_lru(naive_groups(t, chunk, capacity), capacity);
        EXPECT_EQ(got->prompt.accesses, want.prompt.accesses) << seed << " " << chunk;
        EXPECT_EQ(got->prompt.hits, want.prompt.hits) << seed << " " << chunk << " " << capacity;
        EXPECT_EQ(got->generated.hits, want.generated.hits) << seed << " " << chunk;
        EXPECT_EQ(got->generated.accesses, 35u * 3 * 3);
      }
    }
  }
}

TEST(CacheSimulator, ChunkedPrefillNeedsEachUnitOncePerChunk) {
  // One layer, k = 2; prompt tokens {0,1} {1,2} {2,3}, then one generated token {0,3}. In
  // chunks of 2 the prompt needs {0,1,2} and then {2,3}: 5 accesses, 1 hit (2).
  ExpertTrace t;
  t.n_layer = 1;
  t.n_expert = 4;
  t.n_expert_used = 2;
  t.n_prompt_tokens = 3;
  t.experts = {0, 1, 1, 2, 2, 3, 0, 3};
  const auto run = replay(t, "lru", {4, false, 2});
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->prompt.accesses, 5u);
  EXPECT_EQ(run->prompt.hits, 1u);
  EXPECT_EQ(run->generated.hits, 2u);
  const auto min = replay(t, "min", {4, false, 2});
  EXPECT_EQ(min->prompt.accesses, 5u);
  EXPECT_EQ(min->prompt.hits, 1u);
}

TEST(CacheSimulator, MinBeatsEveryPolicy) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    const ExpertTrace t = random_trace(4, 16, 4, 100, 30, seed);
    for (size_t capacity : {4, 8, 16, 32}) {
      for (uint64_t chunk : {0, 7}) {
        const uint64_t best = replay(t, "min", {capacity, false, chunk})->total().hits;
        for (std::string_view policy : replayable_policies()) {
          for (bool scan : {false, true}) {
            const auto run = replay(t, policy, {capacity, scan, chunk});
            ASSERT_TRUE(run.ok()) << policy;
            EXPECT_LE(run->total().hits, best) << policy << " " << capacity << " " << chunk;
          }
        }
      }
    }
  }
}

TEST(CacheSimulator, ACacheOfEveryUnitOnlyMissesFirstUses) {
  const ExpertTrace t = random_trace(3, 10, 2, 50, 10, 1);
  std::set<uint32_t> distinct;
  for (uint64_t token = 0; token < t.n_tokens(); ++token)
    for (uint32_t layer = 0; layer < t.n_layer; ++layer)
      for (uint16_t e : t.picks(token, layer)) distinct.insert(layer * 10 + e);
  std::vector<std::string_view> policies = replayable_policies();
  policies.push_back(kMinPolicy);
  for (std::string_view policy : policies) {
    const auto run = replay(t, policy, {30, true, 0});
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->total().accesses - run->total().hits, distinct.size()) << policy;
  }
}

TEST(CacheSimulator, ScanPromptInsertsPromptUnitsAtTheColdEnd) {
  // One layer, k = 1, a cache of 2. Prompt 1 2 3 4, then a generated token needs 1. Inserted
  // as scan units, each new prompt unit is the next victim, so 1 survives; plain LRU keeps
  // only 3 and 4.
  ExpertTrace t;
  t.n_layer = 1;
  t.n_expert = 6;
  t.n_expert_used = 1;
  t.n_prompt_tokens = 4;
  t.experts = {1, 2, 3, 4, 1};
  EXPECT_EQ(replay(t, "lru", {2, true, 0})->generated.hits, 1u);
  EXPECT_EQ(replay(t, "lru", {2, false, 0})->generated.hits, 0u);
}

TEST(CacheSimulator, RefusesACacheSmallerThanOneLayersExperts) {
  const ExpertTrace t = random_trace(2, 8, 4, 5, 5, 2);
  EXPECT_FALSE(replay(t, "lru", {3, false, 0}).ok());
  EXPECT_FALSE(replay(t, "min", {3, false, 0}).ok());
  EXPECT_FALSE(replay(t, "fifo", {8, false, 0}).ok());
}

TEST(ArenaSizes, ParsesPercentagesAndCounts) {
  const auto sizes = parse_arena_sizes("5%,10%,25%,50%,75%,100%,128,12.5%", 512, 8);
  ASSERT_TRUE(sizes.ok()) << sizes.status().message();
  std::vector<size_t> capacities;
  for (const ArenaSize& s : sizes.value()) capacities.push_back(s.capacity);
  EXPECT_EQ(capacities, (std::vector<size_t>{26, 51, 128, 256, 384, 512, 128, 64}));
  EXPECT_EQ(sizes.value()[0].label, "5%");
}

TEST(ArenaSizes, RefusesBadSizes) {
  for (const char* bad : {"", "0%", "101%", "-5%", "1.5", "10%,", "abc", "%", "5%%"})
    EXPECT_FALSE(parse_arena_sizes(bad, 512, 8).ok()) << bad;
  const auto small = parse_arena_sizes("1%", 512, 8);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("5 units, fewer than the 8"), std::string::npos);
}

TEST(CacheSimulator, ThePredictedPolicyCannotBeReplayed) {
  const ExpertTrace t = random_trace(3, 10, 2, 50, 10, 1);
  const auto run = replay(t, "predicted", {30, false, 0});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("traces do not carry"), std::string::npos);
}

}  // namespace
}  // namespace strata
