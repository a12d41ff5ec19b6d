#include "experts/resident_expert_store.h"

#include "base/check.h"

namespace strata {

ResidentExpertStore::ResidentExpertStore(ExpertLayout layout) : layout_(std::move(layout)) {
  for (const LayerExpertLayout& layer : layout_.layers)
    for (const ExpertTensorLayout* part : {&layer.gate, &layer.up, &layer.down})
      STRATA_CHECK(part->resident.size() == size_t(layout_.n_expert));
}

void ResidentExpertStore::begin_layer(int, std::span<const int32_t> experts, bool) {
  pending_.assign(experts.begin(), experts.end());
  stats_.hits += experts.size();
}

Result<std::vector<ClaimedExpert>> ResidentExpertStore::claim_next(int layer) {
  STRATA_CHECK(layer >= 0 && layer < layout_.n_layer());
  const LayerExpertLayout& l = layout_.layers[size_t(layer)];
  auto slice = [](const ExpertTensorLayout& t, int32_t expert) {
    return t.resident[size_t(expert)];
  };
  std::vector<ClaimedExpert> claimed;
  for (int32_t expert : pending_) {
    STRATA_CHECK(expert >= 0 && expert < layout_.n_expert);
    claimed.push_back(
        {expert, ExpertUnit{slice(l.gate, expert), slice(l.up, expert), slice(l.down, expert)}});
  }
  pending_.clear();
  return claimed;
}

}  // namespace strata
