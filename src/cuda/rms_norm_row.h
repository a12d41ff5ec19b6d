// RMSNorm of one row by one block of kNormThreads threads, for the norm kernel and the norm
// fused with a conversion (convert_rows.cu): the same float operations in both.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace strata::cuda {

// Two values a thread for a 2048-wide row: decode waits on one load.
inline constexpr int kNormThreads = 1024;

// The block's sum of `value` in a fixed order: warps by butterfly, then warp 0 over the warps.
__device__ inline double block_sum(double value, double* shared) {
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < int(blockDim.x / 32) ? shared[lane] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2)
      value += __shfl_xor_sync(0xffffffffu, value, offset);
    if (lane == 0) shared[0] = value;
  }
  __syncthreads();
  return shared[0];
}

// y = (row * 1 / sqrt(mean(row^2) + eps)) * weight, the sum of squares in double.
// REQUIRES: blockDim.x == kNormThreads; `partial` [kNormThreads / 32] in shared memory.
__device__ inline void rms_norm_row(const float* row, const float* weight, int64_t n, float eps,
                                    float* y, double* partial) {
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += kNormThreads) sum += double(row[i] * row[i]);
  sum = block_sum(sum, partial);
  const float mean = float(sum / double(n));
  const float scale = 1.0f / sqrtf(mean + eps);
  for (int64_t i = threadIdx.x; i < n; i += kNormThreads) y[i] = (row[i] * scale) * weight[i];
}

}  // namespace strata::cuda
