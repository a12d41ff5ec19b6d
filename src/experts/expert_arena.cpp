#include "experts/expert_arena.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "base/check.h"

namespace strata {
namespace {

size_t round_up(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

const ExpertTensorLayout& slice_of(const LayerExpertLayout& layer, int slice) {
  return slice == 0 ? layer.gate : slice == 1 ? layer.up : layer.down;
}

}  // namespace

std::vector<ExpertArena::SizeClass> ExpertArena::plan_classes(const ExpertLayout& layout,
                                                              size_t alignment) {
  std::map<std::pair<std::array<size_t, 3>, size_t>, size_t> index;
  std::vector<SizeClass> classes;
  for (int layer = 0; layer < layout.n_layer(); ++layer) {
    const auto& l = layout.layers[size_t(layer)];
    const std::array<size_t, 3> bytes = {l.gate.expert_bytes, l.up.expert_bytes,
                                         l.down.expert_bytes};
    const size_t span = l.contiguous_unit_span(alignment);
    auto [it, inserted] = index.emplace(std::pair(bytes, span), classes.size());
    if (inserted) {
      SizeClass c;
      c.slice_bytes = bytes;
      c.unit_span = span;
      // A read can start anywhere in an alignment unit: one extra unit covers the shift.
      if (span > 0) {
        c.region_bytes = {round_up(span, alignment) + alignment};
      } else {
        for (size_t slice : bytes) c.region_bytes.push_back(round_up(slice, alignment) + alignment);
      }
      for (size_t region : c.region_bytes) c.slot_bytes += region;
      classes.push_back(c);
    }
    classes[it->second].layers.push_back(layer);
  }
  return classes;
}

uint64_t ExpertArena::minimum_bytes(const ExpertLayout& layout, size_t alignment, int min_slots) {
  uint64_t bytes = 0;
  for (const SizeClass& c : plan_classes(layout, alignment))
    bytes += uint64_t(c.slot_bytes) * uint64_t(min_slots);
  return bytes;
}

uint64_t ExpertArena::all_units_bytes(const ExpertLayout& layout, size_t alignment) {
  uint64_t bytes = 0;
  for (const SizeClass& c : plan_classes(layout, alignment))
    bytes += uint64_t(c.slot_bytes) * c.layers.size() * uint64_t(layout.n_expert);
  return bytes;
}

std::vector<ExpertArena::SizeClass> ExpertArena::plan(const ExpertLayout& layout,
                                                      uint64_t budget_bytes, size_t alignment,
                                                      int min_slots) {
  std::vector<SizeClass> classes = plan_classes(layout, alignment);
  // Each class gets the budget in proportion to the bytes of all its units, and at least
  // min_slots; the whole file fits when the budget allows (no class gets more slots than
  // it has units).
  uint64_t all_units = 0;
  for (const SizeClass& c : classes)
    all_units += uint64_t(c.slot_bytes) * c.layers.size() * uint64_t(layout.n_expert);
  for (SizeClass& c : classes) {
    const uint64_t units = c.layers.size() * uint64_t(layout.n_expert);
    const double share = double(c.slot_bytes) * double(units) / double(all_units);
    const uint64_t slots = uint64_t(double(budget_bytes) * share) / c.slot_bytes;
    c.n_slots = int(std::clamp<uint64_t>(slots, uint64_t(min_slots), units));
  }
  return classes;
}

Result<std::unique_ptr<ExpertArena>> ExpertArena::create(const ExpertLayout& layout,
                                                         uint64_t budget_bytes, size_t alignment,
                                                         int min_slots,
                                                         const SlotMemoryMaker& make_memory) {
  auto arena = std::unique_ptr<ExpertArena>(new ExpertArena());
  arena->layout_ = layout;
  arena->alignment_ = alignment;
  arena->class_of_layer_.assign(size_t(layout.n_layer()), 0);
  const uint64_t minimum = minimum_bytes(layout, alignment, min_slots);
  if (budget_bytes < minimum)
    return Status::errorf(
        "the expert arena needs at least {} bytes ({} slots of each size class), "
        "{} more than the {} bytes left for it",
        minimum, min_slots, minimum - budget_bytes, budget_bytes);
  arena->classes_ = plan(layout, budget_bytes, alignment, min_slots);
  std::vector<SlotClassShape> shapes;
  for (size_t i = 0; i < arena->classes_.size(); ++i) {
    const SizeClass& c = arena->classes_[i];
    for (int layer : c.layers) arena->class_of_layer_[size_t(layer)] = int(i);
    shapes.push_back({c.slot_bytes, c.n_slots});
  }
  STRATA_ASSIGN_OR_RETURN(arena->memory_, make_memory(shapes, alignment));
  return arena;
}

int ExpertArena::total_slots() const {
  int total = 0;
  for (const SizeClass& c : classes_) total += c.n_slots;
  return total;
}

ExpertUnit ExpertArena::unit_in_slot(int layer, int32_t expert, int slot) const {
  const int size_class = class_of_layer(layer);
  const SizeClass& c = classes_[size_t(size_class)];
  const uint8_t* region = memory_->compute_address(size_class, slot);
  const LayerExpertLayout& l = layout_.layers[size_t(layer)];
  std::array<const uint8_t*, 3> slices;
  if (c.unit_span > 0) {
    const uint64_t unit_offset = l.gate.file_offsets[size_t(expert)];
    for (int s = 0; s < 3; ++s)
      slices[size_t(s)] = region + unit_offset % alignment_ +
                          (slice_of(l, s).file_offsets[size_t(expert)] - unit_offset);
  } else {
    for (int s = 0; s < 3; ++s) {
      slices[size_t(s)] = region + slice_of(l, s).file_offsets[size_t(expert)] % alignment_;
      region += c.region_bytes[size_t(s)];
    }
  }
  return ExpertUnit{slices[0], slices[1], slices[2]};
}

ExpertArena::UnitReads ExpertArena::reads_for(int layer, int32_t expert, int slot,
                                              uint64_t file_size) const {
  const int size_class = class_of_layer(layer);
  const SizeClass& c = classes_[size_t(size_class)];
  uint8_t* region = memory_->read_target(size_class, slot);
  const LayerExpertLayout& l = layout_.layers[size_t(layer)];
  UnitReads reads;
  auto add = [&](uint64_t offset, uint64_t length) {
    const uint64_t begin = offset / alignment_ * alignment_;
    const uint64_t end =
        std::min<uint64_t>(round_up(offset + length, alignment_), round_up(file_size, alignment_));
    reads.storage[reads.count] = ReadRange{region, begin, size_t(end - begin)};
    region += c.region_bytes[reads.count++];
  };
  if (c.unit_span > 0) {
    const uint64_t unit_offset = l.gate.file_offsets[size_t(expert)];
    add(unit_offset, l.down.file_offsets[size_t(expert)] + l.down.expert_bytes - unit_offset);
  } else {
    for (int s = 0; s < 3; ++s)
      add(slice_of(l, s).file_offsets[size_t(expert)], slice_of(l, s).expert_bytes);
  }
  return reads;
}

}  // namespace strata
