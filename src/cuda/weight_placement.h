// The weights a CUDA backend computes with: host ranges (Backend::place) and their copies in
// device memory. Any host address inside a placed range resolves to the same offset in its copy,
// so matrices, row ranges and the slices of stacked experts that point into a placed tensor all
// resolve. Each copy keeps its range's alignment modulo 256 (a tensor's rows stay as aligned as
// the file has them).
//
// The resident engine places every expert this way. An expert arena in device memory hands the
// kernels its slots' device addresses instead: its blocks are added as memory computed from in
// place, whose addresses resolve to themselves (host and device addresses never coincide under
// CUDA's unified addressing).
//
// Thread-compatible (the engine's compute thread).
#pragma once

#include <strata/status.h>

#include <cstddef>
#include <cstdint>
#include <map>

#include "cuda/cuda_memory.h"

namespace strata::cuda {

class WeightPlacement {
 public:
  // Copies [host, host + bytes) to device memory, unless a placed range holds it already.
  Status place(const void* host, size_t bytes);
  // Device memory the kernels read where it is (an expert arena's slots).
  void compute_in_place(const uint8_t* device, size_t bytes);
  // The device address of `host`. REQUIRES: inside a placed range (a weight the model layer
  // placed: anything else is our bug).
  const uint8_t* resolve(const void* host) const;
  const float* resolve(const float* host) const {
    return reinterpret_cast<const float*>(resolve(static_cast<const void*>(host)));
  }
  uint64_t bytes() const { return bytes_; }

 private:
  struct Copy {
    size_t bytes;
    DeviceBuffer memory;    // empty for memory computed from in place
    const uint8_t* device;  // where the range's first byte is, inside `memory`
  };
  // The copy whose range holds `address`, or nullptr.
  const std::pair<const uintptr_t, Copy>* find(uintptr_t address) const;

  std::map<uintptr_t, Copy> copies_;  // by the host range's first address
  uint64_t bytes_ = 0;
};

}  // namespace strata::cuda
