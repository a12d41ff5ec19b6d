#include "experts/cache_simulator.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/check.h"
#include "experts/belady.h"
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
  };
  std::vector<uint32_t> units;
  std::vector<Group> groups;
  std::vector<uint32_t> sizes() const {
    std::vector<uint32_t> sizes;
    for (const Group& g : groups) sizes.push_back(g.size);
    return sizes;
  }
};

// Adds the sorted, distinct `units` as groups of at most `capacity`.
void add_groups(Schedule& schedule, std::vector<uint32_t>& units, bool prompt, size_t capacity) {
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  for (size_t at = 0; at < units.size(); at += capacity) {
    const size_t size = std::min(capacity, units.size() - at);
    schedule.groups.push_back({schedule.units.size(), uint32_t(size), prompt});
    schedule.units.insert(schedule.units.end(), units.begin() + ptrdiff_t(at),
                          units.begin() + ptrdiff_t(at + size));
  }
}

Schedule make_schedule(const ExpertTrace& trace, const ReplayOptions& options) {
  Schedule schedule;
  std::vector<uint32_t> units;
  uint64_t token = 0;
  if (options.prefill_chunk > 0) {
    for (; token < trace.n_prompt_tokens; token += options.prefill_chunk) {
      const uint64_t end = std::min(token + options.prefill_chunk, trace.n_prompt_tokens);
      for (uint32_t layer = 0; layer < trace.n_layer; ++layer) {
        units.clear();
        for (uint64_t t = token; t < end; ++t)
          for (uint16_t expert : trace.picks(t, layer))
            units.push_back(unit_of(trace, layer, expert));
        add_groups(schedule, units, true, options.capacity);
      }
    }
    token = trace.n_prompt_tokens;
  }
  for (; token < trace.n_tokens(); ++token) {
    for (uint32_t layer = 0; layer < trace.n_layer; ++layer) {
      units.clear();
      for (uint16_t expert : trace.picks(token, layer))
        units.push_back(unit_of(trace, layer, expert));
      add_groups(schedule, units, token < trace.n_prompt_tokens, options.capacity);
    }
  }
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

CacheRun replay_policy(const Schedule& schedule, ReplacementPolicy& policy, size_t n_units,
                       const ReplayOptions& options) {
  std::vector<uint8_t> resident(n_units, 0);
  std::vector<size_t> group_of(n_units, 0);  // 1 + index of the last group that needed it
  size_t n_resident = 0;
  CacheRun run;
  for (size_t g = 0; g < schedule.groups.size(); ++g) {
    const Schedule::Group& group = schedule.groups[g];
    const std::span<const uint32_t> units(schedule.units.data() + group.begin, group.size);
    CacheCounts& counts = group.prompt ? run.prompt : run.generated;
    counts.accesses += group.size;
    for (uint32_t unit : units) {
      group_of[unit] = g + 1;
      if (!resident[unit]) continue;
      ++counts.hits;
      policy.on_access(unit);
    }
    for (uint32_t unit : units) {
      if (resident[unit]) continue;
      if (n_resident == options.capacity) {
        const auto victim = policy.victim([&](uint32_t u) { return group_of[u] != g + 1; });
        STRATA_CHECK(victim.has_value() && resident[*victim] && group_of[*victim] != g + 1);
        policy.on_remove(*victim);
        resident[*victim] = 0;
        --n_resident;
      }
      policy.on_insert(unit, group.prompt && options.scan_prompt);
      resident[unit] = 1;
      ++n_resident;
    }
  }
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

Result<CacheRun> replay(const ExpertTrace& trace, std::string_view policy,
                        const ReplayOptions& options) {
  if (options.capacity < trace.n_expert_used)
    return Status::errorf("a cache of {} units cannot hold the {} experts a layer needs at once",
                          options.capacity, trace.n_expert_used);
  std::unique_ptr<ReplacementPolicy> replacement;
  if (policy != kMinPolicy) {
    STRATA_ASSIGN_OR_RETURN(replacement, make_policy(policy, options.capacity));
  }
  const Schedule schedule = make_schedule(trace, options);
  if (!replacement) return replay_min(schedule, options.capacity);
  return replay_policy(schedule, *replacement, trace.n_units(), options);
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
