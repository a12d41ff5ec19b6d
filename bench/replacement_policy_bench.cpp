// The replacement policies' own cost per layer visit, in the arena's decode pattern on the 30B-A3B
// shape (48 layers x 128 experts, top-8): a 25 % arena (1,536 units) or 50 % (3,072), each visit
// one on_layer(), the layer's 8 routed experts accessed or inserted (a victim evicted for each
// insert into a full arena, the layer's own experts pinned), then 8 read-ahead inserts for the
// next layer. Experts are drawn from a skewed distribution (expert e with weight 1 / (1 + e/8)
// under a per-layer permutation), so that some stay hot and most come and go. The Time column is
// per visit: a token is 48 of them. The successor policy runs on the compute thread between a
// layer's routes and its experts' launches, so on a device arena its cost is the device's idle
// time.
//
//   replacement_policy_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "base/check.h"
#include "experts/replacement_policy.h"

namespace strata {
namespace {

constexpr int kLayers = 48, kExperts = 128, kUsed = 8;

class Replay {
 public:
  Replay(const std::string& policy, size_t capacity) : capacity_(capacity), rng_(11) {
    auto made = make_policy(policy, {capacity, kLayers, kExperts});
    STRATA_CHECK(made.ok());
    policy_ = std::move(made).value();
    resident_.assign(size_t(kLayers * kExperts), 0);
    pinned_.assign(resident_.size(), 0);
    std::vector<double> weights(kExperts);
    for (int e = 0; e < kExperts; ++e) weights[size_t(e)] = 1.0 / (1.0 + e / 8.0);
    pick_ = std::discrete_distribution<int>(weights.begin(), weights.end());
    permutations_.resize(size_t(kLayers));
    for (auto& p : permutations_) {
      p.resize(kExperts);
      std::iota(p.begin(), p.end(), 0);
      std::shuffle(p.begin(), p.end(), rng_);
    }
  }

  void visit(int layer) {
    policy_->on_layer(layer, false);
    const std::vector<uint32_t> routed = draw(layer);
    for (uint32_t u : routed) pinned_[u] = 1;
    for (uint32_t u : routed) bring(u);
    for (uint32_t u : draw((layer + 1) % kLayers))
      if (!resident_[u]) bring(u);
    for (uint32_t u : routed) pinned_[u] = 0;
  }

 private:
  std::vector<uint32_t> draw(int layer) {
    std::vector<uint32_t> units;
    while (units.size() < size_t(kUsed)) {
      const uint32_t u =
          uint32_t(layer * kExperts + permutations_[size_t(layer)][size_t(pick_(rng_))]);
      if (std::find(units.begin(), units.end(), u) == units.end()) units.push_back(u);
    }
    return units;
  }

  void bring(uint32_t unit) {
    if (resident_[unit]) {
      policy_->on_access(unit);
      return;
    }
    if (count_ == capacity_) {
      const auto victim = policy_->victim([&](uint32_t u) { return !pinned_[u]; });
      STRATA_CHECK(victim.has_value());
      policy_->on_remove(*victim);
      resident_[*victim] = 0;
      --count_;
    }
    policy_->on_insert(unit, false);
    resident_[unit] = 1;
    ++count_;
  }

  size_t capacity_, count_ = 0;
  std::mt19937 rng_;
  std::unique_ptr<ReplacementPolicy> policy_;
  std::vector<uint8_t> resident_, pinned_;
  std::discrete_distribution<int> pick_;
  std::vector<std::vector<int>> permutations_;
};

void BM_Visit(benchmark::State& state, const std::string& policy, int share_percent) {
  Replay replay(policy, size_t(kLayers * kExperts * share_percent / 100));
  int layer = 0;
  for (int i = 0; i < 4 * kLayers * kLayers; ++i, layer = (layer + 1) % kLayers)
    replay.visit(layer);  // warm: the arena full, the tables learned
  for (auto _ : state) {
    replay.visit(layer);
    layer = (layer + 1) % kLayers;
  }
}

BENCHMARK_CAPTURE(BM_Visit, successor_25, std::string("successor"), 25);
BENCHMARK_CAPTURE(BM_Visit, successor_50, std::string("successor"), 50);
BENCHMARK_CAPTURE(BM_Visit, nextuse_25, std::string("nextuse"), 25);
BENCHMARK_CAPTURE(BM_Visit, lru_25, std::string("lru"), 25);

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
