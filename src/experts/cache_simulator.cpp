#include "experts/cache_simulator.h"

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

CacheRun replay_min(const ExpertTrace& trace, size_t capacity) {
  std::vector<uint32_t> units;
  units.reserve(trace.experts.size());
  for (uint64_t token = 0; token < trace.n_tokens(); ++token)
    for (uint32_t layer = 0; layer < trace.n_layer; ++layer)
      for (uint16_t expert : trace.picks(token, layer))
        units.push_back(unit_of(trace, layer, expert));
  const std::vector<uint8_t> hits = belady_hits(units, trace.n_expert_used, capacity);
  const uint64_t per_token = uint64_t(trace.n_layer) * trace.n_expert_used;
  CacheRun run;
  for (size_t i = 0; i < hits.size(); ++i) {
    CacheCounts& counts = i / per_token < trace.n_prompt_tokens ? run.prompt : run.generated;
    ++counts.accesses;
    counts.hits += hits[i];
  }
  return run;
}

CacheRun replay_policy(const ExpertTrace& trace, ReplacementPolicy& policy,
                       const ReplayOptions& options) {
  std::vector<uint8_t> resident(trace.n_units(), 0);
  std::vector<uint64_t> group_of(trace.n_units(), 0);  // last (token, layer) + 1 that used it
  size_t n_resident = 0;
  uint64_t group = 0;
  CacheRun run;
  for (uint64_t token = 0; token < trace.n_tokens(); ++token) {
    const bool is_prompt = token < trace.n_prompt_tokens;
    CacheCounts& counts = is_prompt ? run.prompt : run.generated;
    for (uint32_t layer = 0; layer < trace.n_layer; ++layer) {
      ++group;
      for (uint16_t expert : trace.picks(token, layer))
        group_of[unit_of(trace, layer, expert)] = group;
      for (uint16_t expert : trace.picks(token, layer)) {
        const uint32_t unit = unit_of(trace, layer, expert);
        ++counts.accesses;
        if (resident[unit]) {
          ++counts.hits;
          policy.on_access(unit);
          continue;
        }
        if (n_resident == options.capacity) {
          const auto victim = policy.victim([&](uint32_t u) { return group_of[u] != group; });
          STRATA_CHECK(victim.has_value() && resident[*victim] && group_of[*victim] != group);
          policy.on_remove(*victim);
          resident[*victim] = 0;
          --n_resident;
        }
        policy.on_insert(unit, is_prompt && options.scan_prompt);
        resident[unit] = 1;
        ++n_resident;
      }
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
  if (policy == kMinPolicy) return replay_min(trace, options.capacity);
  STRATA_ASSIGN_OR_RETURN(auto replacement, make_policy(policy, options.capacity));
  return replay_policy(trace, *replacement, options);
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
