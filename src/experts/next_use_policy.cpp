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
  for (size_t unit = 0; unit < units_.size(); ++unit)
    units_[unit].layer = int32_t(unit / size_t(n_expert));
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
  const Layer& layer = layers_[size_t(u.layer)];
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
  const int64_t visits = layers_[size_t(u.layer)].visits;
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
  const int layer = units_[unit].layer;
  // The ranks come from the layer's latest visit: while it runs, they are not yet about the
  // next one.
  const bool ranked = successors_ && !(counting_ && layer == current_layer_);
  return ranked ? successors_->bucket(layer, int(unit) - layer * n_expert_) : -1;
}

std::span<const float> NextUsePolicy::predictions_for(uint32_t unit) const {
  if (horizon_ == 0) return {};
  const int layer = units_[unit].layer;
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

int NextUsePolicy::next_visit_pair(uint32_t unit) const {
  return (next_visit_bucket(unit) + 1) * int(uses_.size()) + next_visit_cell(unit);
}

double NextUsePolicy::tail_at(int pair) const {
  if (tail_generations_[size_t(pair)] == table_generation_) return tails_[size_t(pair)];
  const int cells = int(uses_.size());
  return next_use_tail(pair / cells - 1, pair % cells);
}

void NextUsePolicy::refresh_pairs(int layer) {
  if (predicted_) return;
  for (int e = 0; e < n_expert_; ++e) {
    const uint32_t unit = uint32_t(layer * n_expert_ + e);
    const int32_t index = units_[unit].resident_index;
    if (index >= 0) resident_pair_[size_t(index)] = next_visit_pair(unit);
  }
}

double NextUsePolicy::expected_next_use(uint32_t unit) const {
  STRATA_CHECK_LT(unit, units_.size());
  const int layer = units_[unit].layer;
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
  next_uses_current_ = false;
  learn_from_visit();
  const int previous = current_layer_;
  current_layer_ = layer;
  counting_ = !prefill;
  in_prefill_ = prefill;
  if (prefill) {
    // The next counted visit does not follow the latest one.
    followed_[size_t(layer)] = 0;
    if (successors_) successors_->invalidate(layer);
  } else {
    Layer& visiting = layers_[size_t(layer)];
    for (int e = 0; e < n_expert_; ++e) {
      visit_cells_[size_t(e)] = cell(uint32_t(layer * n_expert_ + e), visiting.visits + 1);
      visit_buckets_[size_t(e)] = successors_ ? successors_->bucket(layer, e) : -1;
    }
    ++visiting.visits;
    visiting.visit_mass = visiting.visit_mass * decay_ + 1;
  }
  // Only these two layers' units have new ranks, cells or their own visit's exclusion.
  refresh_pairs(previous);
  if (layer != previous) refresh_pairs(layer);
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
  next_uses_current_ = false;
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
  resident_layer_.push_back(u.layer);
  resident_pair_.push_back(0);
  resident_next_use_.push_back(0);
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
  const size_t index = size_t(u.resident_index);
  resident_[index] = moved;
  resident_layer_[index] = resident_layer_.back();
  resident_pair_[index] = resident_pair_.back();
  resident_next_use_[index] = resident_next_use_.back();
  units_[moved].resident_index = u.resident_index;
  resident_.pop_back();
  resident_layer_.pop_back();
  resident_pair_.pop_back();
  resident_next_use_.pop_back();
  u.resident_index = -1;  // the history stays: it is what helps next time
}

void NextUsePolicy::touched(uint32_t unit) {
  const size_t index = size_t(units_[unit].resident_index);
  if (!predicted_) resident_pair_[index] = next_visit_pair(unit);
  if (next_uses_current_) resident_next_use_[index] = expected_next_use(unit);
}

void NextUsePolicy::compute_next_uses() {
  next_uses_current_ = true;
  if (predicted_) {
    for (size_t i = 0; i < resident_.size(); ++i)
      resident_next_use_[i] = expected_next_use(resident_[i]);
    return;
  }
  // expected_next_use() from the kept pairs: the same sums, without a unit's own state.
  distances_.resize(size_t(n_layer_));
  for (int l = 0; l < n_layer_; ++l)
    distances_[size_t(l)] = double((l - current_layer_ + n_layer_ - 1) % n_layer_ + 1);
  for (size_t i = 0; i < resident_.size(); ++i)
    resident_next_use_[i] = distances_[size_t(resident_layer_[i])] + tail_at(resident_pair_[i]);
}

std::optional<uint32_t> NextUsePolicy::victim(const std::function<bool(uint32_t)>& evictable) {
  if (!next_uses_current_) compute_next_uses();
  // The largest E, then the least recent touch; `evictable` is asked only of a unit that
  // would take the lead.
  int best = -1;
  double best_next_use = 0;
  uint64_t best_touch = 0;
  for (size_t i = 0; i < resident_.size(); ++i) {
    const double next_use = resident_next_use_[i];
    if (best >= 0 && next_use < best_next_use) continue;
    const uint32_t unit = resident_[i];
    const uint64_t touch = units_[unit].last_touch;
    if (best >= 0 && next_use == best_next_use && touch > best_touch) continue;
    if (!evictable(unit)) continue;
    best = int(i);
    best_next_use = next_use;
    best_touch = touch;
  }
  return best >= 0 ? std::optional<uint32_t>(resident_[size_t(best)]) : std::nullopt;
}

}  // namespace strata
