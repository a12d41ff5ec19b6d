#include "experts/replacement_policy.h"

#include <fmt/ranges.h>

#include "experts/arc_policy.h"
#include "experts/lfu_policy.h"
#include "experts/lrfu_policy.h"
#include "experts/lru_policy.h"
#include "experts/next_use_policy.h"
#include "experts/successor_ranks.h"
#include "experts/unit_list.h"

namespace strata {

std::vector<std::string_view> policy_names() {
  return {"lru", "lfu", "arc", "lrfu", "nextuse", "successor", "predicted"};
}

uint64_t policy_table_bytes(std::string_view name, int n_layer, int n_expert) {
  return name == "successor" ? SuccessorRanks::bytes_for(n_layer, n_expert) : 0;
}

Result<std::unique_ptr<ReplacementPolicy>> make_policy(std::string_view name,
                                                       const PolicyShape& shape) {
  if (shape.capacity == 0)
    return Status::errorf("replacement policy {}: the cache has no slots", name);
  if (shape.n_layer < 1 || shape.n_expert < 1 ||
      uint64_t(shape.n_layer) * uint64_t(shape.n_expert) > UnitList::kMaxUnits)
    return Status::errorf("replacement policy {}: {} layers x {} experts is not a unit shape", name,
                          shape.n_layer, shape.n_expert);
  std::unique_ptr<ReplacementPolicy> policy;
  if (name == "lru") policy = std::make_unique<LruPolicy>();
  if (name == "lfu") policy = std::make_unique<LfuPolicy>();
  if (name == "arc") policy = std::make_unique<ArcPolicy>(shape.capacity);
  if (name == "lrfu")
    policy = std::make_unique<LrfuPolicy>(LrfuPolicy::kHalfLifePerSlot * double(shape.capacity));
  if (name == "nextuse")
    policy = std::make_unique<NextUsePolicy>(shape.n_layer, shape.n_expert,
                                             NextUsePolicy::Signal::kHistory);
  if (name == "successor")
    policy = std::make_unique<NextUsePolicy>(shape.n_layer, shape.n_expert,
                                             NextUsePolicy::Signal::kSuccessors);
  if (name == "predicted")
    policy = std::make_unique<NextUsePolicy>(shape.n_layer, shape.n_expert,
                                             NextUsePolicy::Signal::kPredictor);
  if (!policy)
    return Status::errorf("unknown replacement policy '{}' (known: {})", name,
                          fmt::join(policy_names(), ", "));
  return policy;
}

}  // namespace strata
