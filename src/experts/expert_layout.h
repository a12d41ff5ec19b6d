// Where each routed expert's weights are in the model file.
//
// GGUF stores the routed experts of a layer as three stacked tensors, ffn_gate_exps and
// ffn_up_exps [n_expert][n_ff][n_embd] and ffn_down_exps [n_expert][n_embd][n_ff]; expert e's
// slice of each is one contiguous byte range at offset + e * expert_bytes. An *expert unit* is
// the three slices of one expert in one layer: the thing the store loads, caches and evicts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/quant_type.h"

namespace strata {

struct ExpertTensorLayout {
  QuantType type = QuantType::kF32;
  uint64_t file_offset = 0;  // expert 0's slice, from the start of the file
  size_t expert_bytes = 0;   // bytes of one expert's slice (the stride between experts)
  int64_t n_in = 0;          // row length of the slice's matrix
  int64_t n_out = 0;         // rows
  // Expert 0's slice where the model's tensor data holds the stack in memory (the mapped file,
  // or a copy), else nullptr (streaming: units are read into the arena).
  const uint8_t* resident = nullptr;
  // Slices in memory, resident or read into the arena, are in row groups (quant/q4_0_groups.h).
  bool grouped_rows = false;
};

struct LayerExpertLayout {
  ExpertTensorLayout gate, up, down;
  size_t unit_bytes() const { return gate.expert_bytes + up.expert_bytes + down.expert_bytes; }
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
};

// One expert unit's weights, resident in memory while the unit is held.
struct ExpertUnit {
  const uint8_t* gate = nullptr;
  const uint8_t* up = nullptr;
  const uint8_t* down = nullptr;
  // The slices whose layout says grouped_rows are still as the file has them (just read into
  // the arena): the first product that uses them groups them in place, a task's rows at a time,
  // while they are in its cache (cpu/matmul.h, Matrix::group_before_use).
  bool group_before_use = false;
};

}  // namespace strata
