// ExpertArena and LayerExpertLayout::contiguous_unit_span on hand-made layouts: a stacked
// layer's unit is three aligned reads into three regions, a unit-layout layer's one read into
// one region, and the slices land where unit_in_slot says.
#include "experts/expert_arena.h"

#include "backend/host_slot_memory.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

constexpr size_t kPage = 4096;
constexpr int kExperts = 4;
constexpr size_t kGate = 13824, kUp = 13824, kDown = 13824;  // strata-tiny-moe's Q4_0 slices

ExpertTensorLayout slice(size_t bytes) {
  ExpertTensorLayout t;
  t.type = QuantType::kQ4_0;
  t.expert_bytes = bytes;
  t.n_in = 384;
  t.n_out = 64;
  return t;
}

// Three stacks, one after the other, starting at `base`.
LayerExpertLayout stacked(uint64_t base) {
  LayerExpertLayout layer{slice(kGate), slice(kUp), slice(kDown)};
  for (int e = 0; e < kExperts; ++e) {
    layer.gate.file_offsets.push_back(base + e * kGate);
    layer.up.file_offsets.push_back(base + kExperts * kGate + e * kUp);
    layer.down.file_offsets.push_back(base + kExperts * (kGate + kUp) + e * kDown);
  }
  return layer;
}

// Unit after unit from `base`, with `gap` bytes between a unit's slices.
LayerExpertLayout units(uint64_t base, size_t gap = 0) {
  LayerExpertLayout layer{slice(kGate), slice(kUp), slice(kDown)};
  uint64_t at = base;
  for (int e = 0; e < kExperts; ++e) {
    layer.gate.file_offsets.push_back(at);
    layer.up.file_offsets.push_back(at += kGate + gap);
    layer.down.file_offsets.push_back(at += kUp + gap);
    at += kDown;
  }
  return layer;
}

TEST(ContiguousUnitSpan, OnlyUnitsWhoseSlicesFollowEachOther) {
  EXPECT_EQ(units(1000).contiguous_unit_span(kPage), kGate + kUp + kDown);
  EXPECT_EQ(units(1000, 32).contiguous_unit_span(kPage), kGate + kUp + kDown + 64);
  EXPECT_EQ(units(1000, kPage / 2).contiguous_unit_span(kPage), 0u);  // gaps of a page in all
  EXPECT_EQ(stacked(1000).contiguous_unit_span(kPage), 0u);
  LayerExpertLayout swapped = units(1000);
  std::swap(swapped.up.file_offsets, swapped.down.file_offsets);
  EXPECT_EQ(swapped.contiguous_unit_span(kPage), 0u);
}

TEST(ExpertArena, UnitLayoutLayersReadAUnitWithOneReadIntoOneRegion) {
  ExpertLayout layout;
  layout.n_expert = kExperts;
  layout.layers = {stacked(96), units(600000 + 160)};
  EXPECT_EQ(layout.most_reads_per_unit(kPage), 3);
  const uint64_t file_size = 2000000;
  auto created = ExpertArena::create(layout, 1 << 20, kPage, 2, make_host_slot_memory);
  ASSERT_TRUE(created.ok()) << created.status().message();
  const ExpertArena& arena = *created.value();
  ASSERT_EQ(arena.classes().size(), 2u);  // same slice sizes, read differently
  const auto& stacked_class = arena.classes()[size_t(arena.class_of_layer(0))];
  const auto& unit_class = arena.classes()[size_t(arena.class_of_layer(1))];
  EXPECT_EQ(stacked_class.region_bytes.size(), 3u);
  EXPECT_EQ(unit_class.region_bytes.size(), 1u);
  EXPECT_LT(unit_class.slot_bytes, stacked_class.slot_bytes);

  for (int layer : {0, 1}) {
    const LayerExpertLayout& l = layout.layers[size_t(layer)];
    for (int32_t e = 0; e < kExperts; ++e) {
      const int slot = e % 2;
      const auto reads = arena.reads_for(layer, e, slot, file_size);
      ASSERT_EQ(reads.count, layer == 0 ? 3u : 1u);
      const ExpertUnit unit = arena.unit_in_slot(layer, e, slot);
      const uint8_t* slices[] = {unit.gate, unit.up, unit.down};
      const ExpertTensorLayout* parts[] = {&l.gate, &l.up, &l.down};
      for (int s = 0; s < 3; ++s) {
        // The read that covers slice s puts its first byte where unit_in_slot says it is.
        const ReadRange& read = reads.storage[layer == 0 ? size_t(s) : 0];
        const uint64_t offset = parts[s]->file_offsets[size_t(e)];
        EXPECT_EQ(read.offset % kPage, 0u);
        EXPECT_EQ(read.length % kPage, 0u);
        EXPECT_LE(read.offset, offset);
        EXPECT_GE(read.offset + read.length, offset + parts[s]->expert_bytes);
        EXPECT_EQ(slices[s], static_cast<const uint8_t*>(read.destination) + (offset - read.offset))
            << "layer " << layer << " expert " << e << " slice " << s;
      }
      // The reads stay inside the slot.
      size_t region_total = 0;
      for (size_t r = 0; r < reads.count; ++r) {
        const auto& c = layer == 0 ? stacked_class : unit_class;
        EXPECT_LE(reads.storage[r].length, c.region_bytes[r]);
        region_total += c.region_bytes[r];
      }
      EXPECT_EQ(region_total, (layer == 0 ? stacked_class : unit_class).slot_bytes);
    }
  }
}

}  // namespace
}  // namespace strata
