#include "experts/resident_expert_store.h"

#include "base/check.h"

namespace strata {

ExpertUnit unit_in_file(const ExpertLayout& layout, const uint8_t* file_bytes, int layer,
                        int32_t expert) {
  STRATA_CHECK(layer >= 0 && layer < layout.n_layer());
  STRATA_CHECK(expert >= 0 && expert < layout.n_expert);
  const LayerExpertLayout& l = layout.layers[size_t(layer)];
  auto slice = [&](const ExpertTensorLayout& t) {
    return file_bytes + t.file_offset + uint64_t(expert) * t.expert_bytes;
  };
  return ExpertUnit{slice(l.gate), slice(l.up), slice(l.down)};
}

void ResidentExpertStore::begin_layer(int, std::span<const int32_t> experts, bool) {
  pending_.assign(experts.begin(), experts.end());
  stats_.hits += experts.size();
}

Result<std::vector<ClaimedExpert>> ResidentExpertStore::claim_next(int layer) {
  std::vector<ClaimedExpert> claimed;
  for (int32_t expert : pending_)
    claimed.push_back({expert, unit_in_file(layout_, file_->bytes().data(), layer, expert)});
  pending_.clear();
  return claimed;
}

}  // namespace strata
