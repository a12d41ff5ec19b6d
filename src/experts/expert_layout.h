// Where each routed expert's weights are in the model file.
//
// An *expert unit* is the three slices (gate, up, down) of one expert in one layer: the thing
// the store loads, caches and evicts. GGUF files as llama.cpp writes them stack the routed
// experts of a layer into three tensors, ffn_gate_exps and ffn_up_exps [n_expert][n_ff][n_embd]
// and ffn_down_exps [n_expert][n_embd][n_ff], so a unit is three byte ranges far apart. Files
// in the unit layout (`strata repack`, model/unit_layout.h) hold one tensor per expert and
// slice, blk.N.ffn_{gate,up,down}.E.weight, written unit after unit: a unit is one range, read
// with one request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "quant/quant_type.h"

namespace strata {

struct ExpertTensorLayout {
  QuantType type = QuantType::kF32;
  size_t expert_bytes = 0;  // bytes of one expert's slice
  int64_t n_in = 0;         // row length of the slice's matrix
  int64_t n_out = 0;        // rows
  // Each expert's slice, from the start of the file.
  std::vector<uint64_t> file_offsets;
  // Each expert's slice where the model's tensor data holds it in memory (the mapped file, or
  // a copy), else empty (streaming: units are read into the arena).
  std::vector<const uint8_t*> resident;
  // Slices in memory, resident or read into the arena, are in row groups
  // (cpu/kernels/q4_0_groups.h).
  bool grouped_rows = false;
  // The file stores the slices in row groups (strata repack --grouped).
  bool grouped_in_file = false;
  // What the arena does to a slice it has just read: group it (by its first product, see
  // ExpertUnit) or ungroup it (before its first product) where the file's order is not the one
  // in memory.
  bool grouped_after_read() const { return grouped_rows && !grouped_in_file; }
  bool ungrouped_after_read() const { return grouped_in_file && !grouped_rows; }
};

struct LayerExpertLayout {
  ExpertTensorLayout gate, up, down;
  size_t unit_bytes() const { return gate.expert_bytes + up.expert_bytes + down.expert_bytes; }
  // The bytes from the start of each unit's gate slice to the end of its down slice, the
  // largest over the layer's experts, if every unit of the layer lies in the file as gate, up,
  // down in that order with gaps (padding) of less than `alignment` bytes in all; else 0. Such
  // a unit is read as one range: the gaps cost less than the widening to `alignment` that
  // reading each slice on its own costs.
  size_t contiguous_unit_span(size_t alignment) const;
};

struct ExpertLayout {
  int n_expert = 0;
  std::vector<LayerExpertLayout> layers;
  int n_layer() const { return int(layers.size()); }
  uint64_t total_bytes() const;
  // Units of 1 MiB or more: reading one is bandwidth-bound, where a small unit's read takes
  // about as long whatever its size (latency-bound). Read-ahead depth and I/O depth default by
  // this (runtime/session.cpp, runtime/session_loader.cpp).
  bool has_large_units() const;
  // Every expert slice's file offset. Each tensor of routed experts starts at one (a stack at
  // its expert 0's); tensors never overlap (GgufFile validates it) and expert tensors are
  // never empty, so a tensor with bytes whose offset is here is a tensor of routed experts.
  std::set<uint64_t> slice_offsets() const;
  // 1 if every layer's units are read as one range each (contiguous_unit_span), else 3.
  int most_reads_per_unit(size_t alignment) const;
  // The largest read of a unit: its span where it is read as one range, else its largest slice,
  // rounded up to `alignment` (one more `alignment` covers a start that is not aligned).
  uint64_t largest_unit_read(size_t alignment) const;
};

// One expert unit's weights, resident in memory while the unit is held.
struct ExpertUnit {
  const uint8_t* gate = nullptr;
  const uint8_t* up = nullptr;
  const uint8_t* down = nullptr;
  // Just read into the arena, and claimed for the first time since: the slices are as the file
  // has them. Those whose layout says grouped_after_read() or ungrouped_after_read() are put in
  // the order this CPU computes by the first product that uses them (Matrix::
  // rearrange_before_use).
  bool fresh_from_file = false;
};

}  // namespace strata
