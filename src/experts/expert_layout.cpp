#include "experts/expert_layout.h"

#include <algorithm>

namespace strata {

size_t LayerExpertLayout::contiguous_unit_span(size_t alignment) const {
  size_t widest = 0;
  for (size_t e = 0; e < gate.file_offsets.size(); ++e) {
    const uint64_t gate_end = gate.file_offsets[e] + gate.expert_bytes;
    const uint64_t up_end = up.file_offsets[e] + up.expert_bytes;
    if (up.file_offsets[e] < gate_end || down.file_offsets[e] < up_end) return 0;
    const uint64_t span = down.file_offsets[e] + down.expert_bytes - gate.file_offsets[e];
    if (span - unit_bytes() >= alignment) return 0;
    widest = std::max(widest, size_t(span));
  }
  return widest;
}

uint64_t ExpertLayout::total_bytes() const {
  uint64_t total = 0;
  for (const auto& layer : layers) total += uint64_t(layer.unit_bytes()) * uint64_t(n_expert);
  return total;
}

uint64_t ExpertLayout::largest_unit_read(size_t alignment) const {
  uint64_t largest = 0;
  for (const LayerExpertLayout& l : layers) {
    const size_t span = l.contiguous_unit_span(alignment);
    const size_t read =
        span > 0 ? span : std::max({l.gate.expert_bytes, l.up.expert_bytes, l.down.expert_bytes});
    largest = std::max<uint64_t>(largest, (read + alignment - 1) / alignment * alignment);
  }
  return largest;
}

bool ExpertLayout::has_large_units() const {
  constexpr size_t kLargeUnitBytes = size_t(1) << 20;
  for (const auto& layer : layers)
    if (layer.unit_bytes() >= kLargeUnitBytes) return true;
  return false;
}

std::set<uint64_t> ExpertLayout::slice_offsets() const {
  std::set<uint64_t> offsets;
  for (const LayerExpertLayout& layer : layers)
    for (const ExpertTensorLayout* part : {&layer.gate, &layer.up, &layer.down})
      offsets.insert(part->file_offsets.begin(), part->file_offsets.end());
  return offsets;
}

int ExpertLayout::most_reads_per_unit(size_t alignment) const {
  for (const auto& layer : layers)
    if (layer.contiguous_unit_span(alignment) == 0) return 3;
  return 1;
}

}  // namespace strata
