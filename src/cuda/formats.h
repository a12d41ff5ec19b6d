// The tensor formats the CUDA kernels read, numbered as QuantType (ggml's type ids). The kernels'
// files cannot include quant/quant_type.h (its fmt does not compile under nvcc); the backend
// checks that the two numberings agree (cuda_backend.cpp).
#pragma once

#include <cstdint>

namespace strata::cuda {

enum class Format : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
  kQ2_0 = 1000,
};

// Weights per chunk, the unit every kernel decodes: one block of the 32-weight formats, half a
// Q2_0 block, an eighth of a k-quant super-block, 32 values of a float format.
inline constexpr int kChunkWeights = 32;

}  // namespace strata::cuda
