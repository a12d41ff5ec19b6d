#include "experts/next_use_policy.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "base/check.h"
#include "experts/unit_list.h"

namespace strata {
namespace {

constexpr int kGapBuckets = 12;  // gaps 1, 2, 3, 4, 5-7, 8-15, ..., 128-255, 256+; never
constexpr int kNeverUsed = kGapBuckets - 1;
constexpr int kFrequencySteps = 3;  // buckets per octave
// Frequencies that land on a bucket boundary up to rounding go to the upper bucket, so the
// bucket does not depend on the order in which the decays were applied.
constexpr double kBoundarySlack = 1e-9;

int gap_bucket(int64_t gap) {
  if (gap <= 4) return int(gap) - 1;
  return std::min(4 + int(std::bit_width(uint64_t(gap))) - 3, kNeverUsed - 1);
}

}  // namespace

NextUsePolicy::NextUsePolicy(int n_layer, int n_expert, Signal signal)
    : n_layer_(n_layer),
      n_expert_(n_expert),
      decay_(std::exp2(-1.0 / kHalfLifeVisits)),
      current_layer_(n_layer - 1) {
  STRATA_CHECK(n_layer >= 1 && n_expert >= 1);
  STRATA_CHECK_LE(uint64_t(n_layer) * uint64_t(n_expert), uint64_t(UnitList::kMaxUnits));
  n_frequency_ =
      2 + int(std::floor(kFrequencySteps * std::log2(double(n_expert)) + kBoundarySlack));
  units_.resize(size_t(n_layer) * size_t(n_expert));
  layers_.resize(size_t(n_layer));
  uses_.assign(size_t(kGapBuckets * n_frequency_), 0.0);
  samples_.assign(uses_.size(), 0.0);
  visit_cells_.assign(size_t(n_expert), 0);
  if (signal == Signal::kSuccessors) successors_.emplace(n_layer, n_expert);
  predicted_ = signal == Signal::kPredictor;
  ranked_uses_.assign(size_t(SuccessorRanks::kBuckets) * uses_.size(), 0.0);
  ranked_samples_.assign(ranked_uses_.size(), 0.0);
  visit_buckets_.assign(size_t(n_expert), -1);
  tails_.assign(size_t(SuccessorRanks::kBuckets + 1) * uses_.size(), 0.0);
  tail_generations_.assign(tails_.size(), 0);
  followed_.assign(size_t(n_layer), 0);
}

NextUsePolicy::Unit& NextUsePolicy::unit_at(uint32_t unit) {
  STRATA_CHECK_LT(unit, units_.size());
  return units_[unit];
}

int NextUsePolicy::cell(uint32_t unit, int64_t visit) const {
  const Unit& u = units_[unit];
  const Layer& layer = layers_[unit / uint32_t(n_expert_)];
  const int gap = u.last_use < 0 ? kNeverUsed : gap_bucket(visit - u.last_use);
  int frequency = 0;
  if (layer.visit_mass > 0 && u.weight > 0) {
    const double per_visit =
        u.weight * std::pow(decay_, double(layer.visits - u.weight_visit)) / layer.visit_mass;
    const double steps = kFrequencySteps * std::log2(per_visit * n_expert_) + kBoundarySlack;
    if (steps >= 0) frequency = std::min(1 + int(std::floor(steps)), n_frequency_ - 1);
  }
  return gap * n_frequency_ + frequency;
}

int NextUsePolicy::next_visit_cell(uint32_t unit) const {
  const Unit& u = units_[unit];
  const int64_t visits = layers_[unit / uint32_t(n_expert_)].visits;
  if (u.cell_visit != visits) {
    u.cell = cell(unit, visits + 1);
    u.cell_visit = visits;
  }
  return u.cell;
}

double NextUsePolicy::rate(int cell) const {
  const double overall = (total_uses_ + 1) / (total_samples_ + 2);
  return (uses_[size_t(cell)] + kPriorSamples * overall) / (samples_[size_t(cell)] + kPriorSamples);
}

double NextUsePolicy::ranked_rate(int bucket, int cell) const {
  const size_t c = size_t(bucket) * uses_.size() + size_t(cell);
  return (ranked_uses_[c] + kPriorSamples * rate(cell)) / (ranked_samples_[c] + kPriorSamples);
}

double NextUsePolicy::probability(int bucket, int cell) const {
  return bucket < 0 ? rate(cell) : ranked_rate(bucket, cell);
}

int NextUsePolicy::next_visit_bucket(uint32_t unit) const {
  const int layer = int(unit / uint32_t(n_expert_));
  // The ranks come from the layer's latest visit: while it runs, they are not yet about the
  // next one.
  const bool ranked = successors_ && !(counting_ && layer == current_layer_);
  return ranked ? successors_->bucket(layer, int(unit) % n_expert_) : -1;
}

std::span<const float> NextUsePolicy::predictions_for(uint32_t unit) const {
  if (horizon_ == 0) return {};
  const int layer = int(unit / uint32_t(n_expert_));
  const std::span<const float> estimates(predictions_.data() + size_t(unit) * size_t(horizon_),
                                         size_t(horizon_));
  if ((counting_ && layer == current_layer_) || std::isnan(estimates[0])) return {};
  return estimates;
}

double NextUsePolicy::predicted_probability(double rate, float estimate) {
  return 0.5 * rate + 0.5 * std::clamp(double(estimate), 1e-3, 1.0);
}

double NextUsePolicy::predicted_tail(std::span<const float> estimates, double rate) const {
  const double n = double(estimates.size());
  double unused = 1, expected = 0, mean = 0;  // expected: over the visits with an estimate
  for (size_t s = 0; s < estimates.size(); ++s) {
    const double q = predicted_probability(rate, estimates[s]);
    expected += unused * q * double(s);
    unused *= 1 - q;
    mean += q / n;
  }
  return n_layer_ * (expected + unused * ((n - 1) + 1 / mean));
}

double NextUsePolicy::use_probability(uint32_t unit) const {
  STRATA_CHECK_LT(unit, units_.size());
  if (const auto estimates = predictions_for(unit); !estimates.empty())
    return predicted_probability(rate(next_visit_cell(unit)), estimates[0]);
  return probability(next_visit_bucket(unit), next_visit_cell(unit));
}

double NextUsePolicy::next_use_tail(int bucket, int cell) const {
  const size_t i = size_t(bucket + 1) * uses_.size() + size_t(cell);
  if (tail_generations_[i] != table_generation_) {
    const double q = probability(bucket, cell);
    tails_[i] = n_layer_ * (1 - q) / q;
    tail_generations_[i] = table_generation_;
  }
  return tails_[i];
}

double NextUsePolicy::expected_next_use(uint32_t unit) const {
  STRATA_CHECK_LT(unit, units_.size());
  const int layer = int(unit / uint32_t(n_expert_));
  const int distance = (layer - current_layer_ + n_layer_ - 1) % n_layer_ + 1;  // 1..n_layer
  if (const auto estimates = predictions_for(unit); !estimates.empty())
    return distance + predicted_tail(estimates, rate(next_visit_cell(unit)));
  return distance + next_use_tail(next_visit_bucket(unit), next_visit_cell(unit));
}

void NextUsePolicy::learn_from_visit() {
  if (!counting_) return;
  const Layer& layer = layers_[size_t(current_layer_)];
  if (!layer.held) return;
  std::vector<int32_t> used_experts;
  for (int e = 0; e < n_expert_; ++e) {
    const size_t c = size_t(visit_cells_[size_t(e)]);
    const bool used = units_[size_t(current_layer_ * n_expert_ + e)].last_use == layer.visits;
    samples_[c] += 1;
    uses_[c] += used;
    total_samples_ += 1;
    total_uses_ += used;
    if (used) used_experts.push_back(int32_t(e));
    const int bucket = visit_buckets_[size_t(e)];
    if (bucket < 0) continue;
    ranked_samples_[size_t(bucket) * uses_.size() + c] += 1;
    ranked_uses_[size_t(bucket) * uses_.size() + c] += used;
  }
  ++table_generation_;
  if (!successors_) return;
  successors_->observe(current_layer_, used_experts, followed_[size_t(current_layer_)]);
  followed_[size_t(current_layer_)] = 1;
}

void NextUsePolicy::on_layer(int layer, bool prefill) {
  STRATA_CHECK(layer >= 0 && layer < n_layer_);
  forget_candidates();
  learn_from_visit();
  current_layer_ = layer;
  counting_ = !prefill;
  in_prefill_ = prefill;
  if (prefill) {
    // The next counted visit does not follow the latest one.
    followed_[size_t(layer)] = 0;
    if (successors_) successors_->invalidate(layer);
    return;
  }
  Layer& visiting = layers_[size_t(layer)];
  for (int e = 0; e < n_expert_; ++e) {
    visit_cells_[size_t(e)] = cell(uint32_t(layer * n_expert_ + e), visiting.visits + 1);
    visit_buckets_[size_t(e)] = successors_ ? successors_->bucket(layer, e) : -1;
  }
  ++visiting.visits;
  visiting.visit_mass = visiting.visit_mass * decay_ + 1;
}

void NextUsePolicy::on_next_visit_scores(int layer, std::span<const float> scores) {
  if (!predicted_) return;
  STRATA_CHECK(layer >= 0 && layer < n_layer_);
  STRATA_CHECK(!scores.empty() && scores.size() % size_t(n_expert_) == 0);
  const int horizon = int(scores.size() / size_t(n_expert_));
  if (horizon_ == 0) {
    horizon_ = horizon;
    predictions_.assign(units_.size() * size_t(horizon), std::numeric_limits<float>::quiet_NaN());
  }
  STRATA_CHECK_EQ(horizon, horizon_);
  forget_candidates();
  for (int e = 0; e < n_expert_; ++e)
    for (int s = 0; s < horizon; ++s)
      predictions_[size_t(layer * n_expert_ + e) * size_t(horizon) + size_t(s)] =
          scores[size_t(s * n_expert_ + e)];
}

void NextUsePolicy::count_use(uint32_t unit) {
  if (in_prefill_) return;
  Unit& u = units_[unit];
  const Layer& layer = layers_[unit / uint32_t(n_expert_)];
  if (u.last_use == layer.visits) return;  // once per visit
  u.weight = u.weight * std::pow(decay_, double(layer.visits - u.weight_visit)) + 1;
  u.weight_visit = layer.visits;
  u.last_use = layer.visits;
  u.cell_visit = -1;
}

void NextUsePolicy::on_insert(uint32_t unit, bool scan) {
  Unit& u = unit_at(unit);
  STRATA_CHECK(u.resident_index < 0);
  u.resident_index = int32_t(resident_.size());
  resident_.push_back(unit);
  layers_[unit / uint32_t(n_expert_)].held = true;
  u.last_touch = ++tick_;
  if (!scan) count_use(unit);
  touched(unit);
}

void NextUsePolicy::on_access(uint32_t unit) {
  Unit& u = unit_at(unit);
  STRATA_CHECK(u.resident_index >= 0);
  u.last_touch = ++tick_;
  count_use(unit);
  touched(unit);
}

void NextUsePolicy::on_remove(uint32_t unit) {
  Unit& u = unit_at(unit);
  STRATA_CHECK(u.resident_index >= 0);
  const uint32_t moved = resident_.back();
  resident_[size_t(u.resident_index)] = moved;
  units_[moved].resident_index = u.resident_index;
  resident_.pop_back();
  u.resident_index = -1;  // the history stays: it is what helps next time
  ++u.stamp;
}

bool NextUsePolicy::ranks_below(const Candidate& a, const Candidate& b) {
  return a.next_use < b.next_use || (a.next_use == b.next_use && a.last_touch > b.last_touch);
}

NextUsePolicy::Candidate NextUsePolicy::candidate(uint32_t unit) const {
  const Unit& u = units_[unit];
  return {expected_next_use(unit), u.last_touch, unit, u.stamp};
}

void NextUsePolicy::touched(uint32_t unit) {
  ++units_[unit].stamp;
  if (!candidates_built_) return;
  candidates_.push_back(candidate(unit));
  std::push_heap(candidates_.begin(), candidates_.end(), ranks_below);
}

void NextUsePolicy::forget_candidates() {
  candidates_.clear();
  held_back_.clear();
  candidates_built_ = false;
}

std::optional<uint32_t> NextUsePolicy::victim(const std::function<bool(uint32_t)>& evictable) {
  if (!candidates_built_) {
    for (uint32_t unit : resident_) candidates_.push_back(candidate(unit));
    std::make_heap(candidates_.begin(), candidates_.end(), ranks_below);
    candidates_built_ = true;
  }
  auto current = [&](const Candidate& c) {
    const Unit& u = units_[c.unit];
    return u.resident_index >= 0 && u.stamp == c.stamp;
  };
  // The best of the units that could not be evicted before (the layer's pinned ones, mostly),
  // then the heap's first that can: nothing below it ranks higher.
  std::optional<Candidate> best;
  std::erase_if(held_back_, [&](const Candidate& c) { return !current(c); });
  for (const Candidate& c : held_back_)
    if (evictable(c.unit) && (!best || ranks_below(*best, c))) best = c;
  while (!candidates_.empty()) {
    const Candidate top = candidates_.front();
    if (current(top) && evictable(top.unit)) {
      if (!best || ranks_below(*best, top)) best = top;
      break;
    }
    if (current(top)) held_back_.push_back(top);
    std::pop_heap(candidates_.begin(), candidates_.end(), ranks_below);
    candidates_.pop_back();
  }
  return best ? std::optional<uint32_t>(best->unit) : std::nullopt;
}

}  // namespace strata
