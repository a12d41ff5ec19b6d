#include "experts/lab/belady.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "base/check.h"

namespace strata {
namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

// For each access, the index of the next group that uses its unit again (kNever if none).
std::vector<uint64_t> next_uses(std::span<const uint32_t> accesses,
                                std::span<const uint32_t> group_sizes, size_t n_unit) {
  std::vector<uint64_t> next(accesses.size());
  std::vector<uint64_t> later_group(n_unit, kNever);
  size_t end = accesses.size();
  for (size_t g = group_sizes.size(); g-- > 0;) {
    for (size_t i = end - group_sizes[g]; i < end; ++i) {
      next[i] = later_group[accesses[i]];
      later_group[accesses[i]] = g;
    }
    end -= group_sizes[g];
  }
  return next;
}

}  // namespace

std::vector<uint8_t> belady_hits(std::span<const uint32_t> accesses,
                                 std::span<const uint32_t> group_sizes, size_t capacity) {
  uint64_t total = 0;
  for (uint32_t size : group_sizes) {
    STRATA_CHECK(size >= 1 && size <= capacity);
    total += size;
  }
  STRATA_CHECK_EQ(total, accesses.size());
  const size_t n_unit =
      accesses.empty() ? 0 : size_t(*std::max_element(accesses.begin(), accesses.end())) + 1;
  const std::vector<uint64_t> next = next_uses(accesses, group_sizes, n_unit);

  // Resident units outside the current group, by next use: the last one is the victim.
  std::set<std::pair<uint64_t, uint32_t>> by_next_use;
  std::vector<uint64_t> key(n_unit);  // the resident unit's entry in by_next_use
  std::vector<uint8_t> resident(n_unit, 0), hit(accesses.size(), 0);
  size_t begin = 0;
  for (uint32_t group_size : group_sizes) {
    const std::span<const uint32_t> group = accesses.subspan(begin, group_size);
    size_t held = 0;  // units of the group already resident, out of by_next_use
    for (size_t j = 0; j < group.size(); ++j) {
      const uint32_t unit = group[j];
      if (!resident[unit]) continue;
      hit[begin + j] = 1;
      by_next_use.erase({key[unit], unit});
      ++held;
    }
    for (uint32_t unit : group) {
      if (resident[unit]) continue;
      if (by_next_use.size() + held == capacity) {
        const auto furthest = std::prev(by_next_use.end());
        resident[furthest->second] = 0;
        by_next_use.erase(furthest);
      }
      resident[unit] = 1;
      ++held;
    }
    for (size_t j = 0; j < group.size(); ++j) {
      key[group[j]] = next[begin + j];
      by_next_use.emplace(key[group[j]], group[j]);
    }
    begin += group_size;
  }
  return hit;
}

}  // namespace strata
