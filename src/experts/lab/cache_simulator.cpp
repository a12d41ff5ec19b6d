#include "experts/lab/cache_simulator.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/check.h"
#include "experts/lab/belady.h"
#include "experts/replacement_policy.h"

namespace strata {
namespace {

uint32_t unit_of(const ExpertTrace& trace, uint32_t layer, uint16_t expert) {
  return layer * trace.n_expert + expert;
}

// The groups of units the arena would be asked for, in order.
struct Schedule {
  struct Group {
    size_t begin;   // into units
    uint32_t size;  // 1..capacity
    bool prompt;
    uint32_t layer;
    bool opens_visit;                 // the first group of its layer's visit
    bool whole_visit;                 // ... and the only one
    uint64_t token_begin, token_end;  // the tokens whose experts it serves
  };
  std::vector<uint32_t> units;
  std::vector<Group> groups;
  std::vector<uint32_t> sizes() const {
    std::vector<uint32_t> sizes;
    for (const Group& g : groups) sizes.push_back(g.size);
    return sizes;
  }
};

// Adds the sorted, distinct `units` of one layer visit as groups of at most `capacity`.
void add_visit(Schedule& schedule, std::vector<uint32_t>& units, const Schedule::Group& visit,
               size_t capacity) {
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  for (size_t at = 0; at < units.size(); at += capacity) {
    const size_t size = std::min(capacity, units.size() - at);
    Schedule::Group group = visit;
    group.begin = schedule.units.size();
    group.size = uint32_t(size);
    group.opens_visit = at == 0;
    group.whole_visit = units.size() <= capacity;
    schedule.groups.push_back(group);
    schedule.units.insert(schedule.units.end(), units.begin() + ptrdiff_t(at),
                          units.begin() + ptrdiff_t(at + size));
  }
}

// One layer visit per layer for tokens [begin, end).
void add_visits(Schedule& schedule, const ExpertTrace& trace, uint64_t begin, uint64_t end,
                size_t capacity) {
  std::vector<uint32_t> units;
  for (uint32_t layer = 0; layer < trace.n_layer; ++layer) {
    units.clear();
    for (uint64_t t = begin; t < end; ++t)
      for (uint16_t expert : trace.picks(t, layer)) units.push_back(unit_of(trace, layer, expert));
    add_visit(schedule, units,
              {0, 0, begin < trace.n_prompt_tokens, layer, false, false, begin, end}, capacity);
  }
}

Schedule make_schedule(const ExpertTrace& trace, const ReplayOptions& options) {
  Schedule schedule;
  uint64_t token = 0;
  if (options.prefill_chunk > 0) {
    for (; token < trace.n_prompt_tokens; token += options.prefill_chunk)
      add_visits(schedule, trace, token,
                 std::min(token + options.prefill_chunk, trace.n_prompt_tokens), options.capacity);
    token = trace.n_prompt_tokens;
  }
  for (; token < trace.n_tokens(); ++token)
    add_visits(schedule, trace, token, token + 1, options.capacity);
  return schedule;
}

CacheRun replay_min(const Schedule& schedule, size_t capacity) {
  const std::vector<uint8_t> hits = belady_hits(schedule.units, schedule.sizes(), capacity);
  CacheRun run;
  for (const Schedule::Group& group : schedule.groups) {
    CacheCounts& counts = group.prompt ? run.prompt : run.generated;
    counts.accesses += group.size;
    for (size_t i = group.begin; i < group.begin + group.size; ++i) counts.hits += hits[i];
  }
  return run;
}

// The arena's slots under a policy, with speculative units (read-ahead) beside the policy's.
class ArenaModel {
 public:
  ArenaModel(const ExpertTrace& trace, ReplacementPolicy& policy, const ReplayOptions& options)
      : trace_(trace),
        policy_(policy),
        options_(options),
        resident_(trace.n_units(), 0),
        speculative_(trace.n_units(), 0),
        group_of_(trace.n_units(), 0) {}

  void serve(const Schedule& schedule, size_t g, CacheCounts& counts) {
    const Schedule::Group& group = schedule.groups[g];
    const std::span<const uint32_t> units(schedule.units.data() + group.begin, group.size);
    const bool scan = group.prompt && options_.scan_prompt;
    if (group.opens_visit) policy_.on_layer(int(group.layer), scan);
    counts.accesses += group.size;
    for (uint32_t unit : units) {
      group_of_[unit] = g + 1;
      if (speculative_[unit]) {
        speculative_[unit] = 0;
        resident_[unit] = 1;
        ++counts.readahead_hits;
        policy_.on_insert(unit, scan);
      } else if (resident_[unit]) {
        ++counts.hits;
        policy_.on_access(unit);
      }
    }
    if (group.opens_visit) drop_speculations(counts);
    for (uint32_t unit : units) {
      if (resident_[unit]) continue;
      STRATA_CHECK(make_room(g));
      policy_.on_insert(unit, scan);
      resident_[unit] = 1;
      ++occupied_;
    }
    if (options_.readahead > 0 && group.whole_visit && group.layer + 1 < trace_.n_layer)
      read_ahead(group, g, counts);
  }

 private:
  // Frees a slot if none is free, evicting the policy's victim outside group g.
  bool make_room(size_t g) {
    if (occupied_ < options_.capacity) return true;
    const auto victim = policy_.victim([&](uint32_t u) { return group_of_[u] != g + 1; });
    if (!victim) return false;
    STRATA_CHECK(resident_[*victim] && group_of_[*victim] != g + 1);
    policy_.on_remove(*victim);
    resident_[*victim] = 0;
    --occupied_;
    return true;
  }

  void drop_speculations(CacheCounts& counts) {
    for (uint32_t unit : speculations_) {
      if (!speculative_[unit]) continue;
      speculative_[unit] = 0;
      --occupied_;
      ++counts.readaheads_wasted;
    }
    speculations_.clear();
  }

  // The forward pass's prediction for the next layer: the union of the group's tokens' top
  // `readahead`, by best rank, then expert id.
  void read_ahead(const Schedule::Group& group, size_t g, CacheCounts& counts) {
    const uint32_t next = group.layer + 1;
    std::vector<uint32_t> best_rank(trace_.n_expert, options_.readahead);
    for (uint64_t t = group.token_begin; t < group.token_end; ++t) {
      const auto predicted = trace_.predicted(t, next);
      for (uint32_t r = 0; r < options_.readahead; ++r)
        best_rank[predicted[r]] = std::min(best_rank[predicted[r]], r);
    }
    for (uint32_t r = 0; r < options_.readahead; ++r) {
      for (uint32_t e = 0; e < trace_.n_expert; ++e) {
        if (best_rank[e] != r) continue;
        const uint32_t unit = unit_of(trace_, next, uint16_t(e));
        if (resident_[unit] || speculative_[unit]) continue;
        if (!make_room(g)) return;
        speculative_[unit] = 1;
        ++occupied_;
        speculations_.push_back(unit);
        ++counts.readaheads_issued;
      }
    }
  }

  const ExpertTrace& trace_;
  ReplacementPolicy& policy_;
  const ReplayOptions& options_;
  std::vector<uint8_t> resident_, speculative_;
  std::vector<size_t> group_of_;  // 1 + index of the last group that needed it
  std::vector<uint32_t> speculations_;
  size_t occupied_ = 0;  // resident and speculative units
};

CacheRun replay_policy(const ExpertTrace& trace, const Schedule& schedule,
                       ReplacementPolicy& policy, const ReplayOptions& options) {
  ArenaModel arena(trace, policy, options);
  CacheRun run;
  for (size_t g = 0; g < schedule.groups.size(); ++g)
    arena.serve(schedule, g, schedule.groups[g].prompt ? run.prompt : run.generated);
  return run;
}

Result<ArenaSize> parse_arena_size(std::string_view item, uint64_t n_units) {
  const bool percent = !item.empty() && item.back() == '%';
  const std::string_view number = percent ? item.substr(0, item.size() - 1) : item;
  double value = 0;
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  const bool whole = end == number.data() + number.size() && error == std::errc();
  if (!whole || !(value > 0) || (percent && value > 100) ||
      (!percent && value != std::floor(value)))
    return Status::errorf("arena size '{}': expected a percentage in (0, 100] or a unit count",
                          item);
  const double units = percent ? std::round(value / 100.0 * double(n_units)) : value;
  return ArenaSize{std::string(item), size_t(std::min(units, double(SIZE_MAX / 2)))};
}

}  // namespace

std::vector<std::string_view> replayable_policies() {
  std::vector<std::string_view> names = policy_names();
  std::erase(names, std::string_view("predicted"));
  return names;
}

Result<CacheRun> replay(const ExpertTrace& trace, std::string_view policy,
                        const ReplayOptions& options) {
  if (options.capacity < trace.n_expert_used)
    return Status::errorf("a cache of {} units cannot hold the {} experts a layer needs at once",
                          options.capacity, trace.n_expert_used);
  if (options.readahead > 0 && !trace.has_predictions)
    return Status::error("read-ahead needs a trace with predictions (strata trace records them)");
  if (options.readahead > trace.n_expert_used)
    return Status::errorf("read-ahead of {} experts: the trace holds the top {} predictions",
                          options.readahead, trace.n_expert_used);
  if (policy == "predicted")
    return Status::error(
        "the 'predicted' policy needs the next-token predictor's estimates, which traces do not "
        "carry: measure it in the arena (strata eval run --predictor FILE --readahead 0)");
  std::unique_ptr<ReplacementPolicy> replacement;
  if (policy != kMinPolicy) {
    STRATA_ASSIGN_OR_RETURN(replacement, make_policy(policy, {options.capacity, int(trace.n_layer),
                                                              int(trace.n_expert)}));
  }
  const Schedule schedule = make_schedule(trace, options);
  if (!replacement) return replay_min(schedule, options.capacity);
  return replay_policy(trace, schedule, *replacement, options);
}

Result<std::vector<ArenaSize>> parse_arena_sizes(std::string_view list, uint64_t n_units,
                                                 size_t min_capacity) {
  std::vector<ArenaSize> sizes;
  while (true) {
    const size_t comma = list.find(',');
    STRATA_ASSIGN_OR_RETURN(ArenaSize size, parse_arena_size(list.substr(0, comma), n_units));
    if (size.capacity < min_capacity)
      return Status::errorf(
          "arena size {} is {} units, fewer than the {} experts a layer needs "
          "at once",
          size.label, size.capacity, min_capacity);
    sizes.push_back(std::move(size));
    if (comma == std::string_view::npos) return sizes;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace strata
