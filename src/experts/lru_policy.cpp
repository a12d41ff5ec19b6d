#include "experts/lru_policy.h"

namespace strata {

void LruPolicy::on_insert(uint32_t unit, bool scan) {
  if (scan)
    resident_.push_cold(unit);
  else
    resident_.push_hot(unit);
}

void LruPolicy::on_access(uint32_t unit) {
  resident_.remove(unit);
  resident_.push_hot(unit);
}

void LruPolicy::on_remove(uint32_t unit) { resident_.remove(unit); }

std::optional<uint32_t> LruPolicy::victim(const std::function<bool(uint32_t)>& evictable) {
  return resident_.coldest_where(evictable);
}

}  // namespace strata
