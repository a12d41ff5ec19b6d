#include "experts/resident_expert_store.h"

#include "base/check.h"

namespace strata {

Result<ExpertUnit> ResidentExpertStore::acquire(int layer, int32_t expert) {
  STRATA_CHECK(layer >= 0 && layer < layout_.n_layer());
  STRATA_CHECK(expert >= 0 && expert < layout_.n_expert);
  const LayerExpertLayout& l = layout_.layers[size_t(layer)];
  const uint8_t* base = file_->bytes().data();
  auto slice = [&](const ExpertTensorLayout& t) {
    return base + t.file_offset + uint64_t(expert) * t.expert_bytes;
  };
  return ExpertUnit{slice(l.gate), slice(l.up), slice(l.down)};
}

}  // namespace strata
