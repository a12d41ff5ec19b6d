#include "experts/replacement_policy.h"

#include <fmt/ranges.h>

#include "experts/arc_policy.h"
#include "experts/lfu_policy.h"
#include "experts/lrfu_policy.h"
#include "experts/lru_policy.h"

namespace strata {

std::vector<std::string_view> policy_names() { return {"lru", "lfu", "arc", "lrfu"}; }

Result<std::unique_ptr<ReplacementPolicy>> make_policy(std::string_view name, size_t capacity) {
  if (capacity == 0) return Status::errorf("replacement policy {}: the cache has no slots", name);
  std::unique_ptr<ReplacementPolicy> policy;
  if (name == "lru") policy = std::make_unique<LruPolicy>();
  if (name == "lfu") policy = std::make_unique<LfuPolicy>();
  if (name == "arc") policy = std::make_unique<ArcPolicy>(capacity);
  if (name == "lrfu")
    policy = std::make_unique<LrfuPolicy>(LrfuPolicy::kHalfLifePerSlot * double(capacity));
  if (!policy)
    return Status::errorf("unknown replacement policy '{}' (known: {})", name,
                          fmt::join(policy_names(), ", "));
  return policy;
}

}  // namespace strata
