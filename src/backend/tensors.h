// Weights as the layer ops see them, whatever backend computes with them: a matrix of
// quantized rows and a vector of floats, each in the memory of the backend that uses it (host
// memory for the CPU backend).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "quant/quant_type.h"

namespace strata {

struct Matrix {
  QuantType type = QuantType::kF32;
  const uint8_t* data = nullptr;
  int64_t n_in = 0;   // row length
  int64_t n_out = 0;  // number of rows
  // Rows rearranged in groups of 8 (the CPU backend's Q4_0 kernel order) by whoever loaded
  // them; row(index) is then the start of a group for index a multiple of 8.
  bool grouped_rows = false;
  // The bytes are still as the file has them, in the other row order than grouped_rows says:
  // the CPU backend rearranges them in place before computing with them, grouping them a task's
  // rows at a time (so they are in its cache when its kernel reads them) or, where this CPU has
  // no grouped kernel but the file is grouped, ungrouping them in a pass first. Afterwards they
  // are in the grouped_rows order; the owner must know that.
  bool rearrange_before_use = false;
  size_t row_bytes() const { return quant_traits(type).row_bytes(n_in); }
  const uint8_t* row(int64_t index) const { return data + size_t(index) * row_bytes(); }
};

using Vector = std::vector<float>;  // a 1-D weight; empty when the architecture has none

}  // namespace strata
