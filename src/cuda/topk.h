// Routing on the GPU: the softmax of router logits and their top-k, as the CPU backend's route()
// and rank_experts() compute them (cpu/cpu_backend.cpp): ties go to the lower expert id, the
// softmax sums in double, cache-aware routing protects the top picks of the exact logits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace strata::cuda {

// Experts a router may have: a warp holds a token's logits, 16 a lane.
inline constexpr int64_t kMaxRoutedExperts = 512;
inline constexpr int kMaxExpertsUsed = 32;

struct RouteLaunch {
  const float* logits = nullptr;  // [n_tokens][n_expert]
  int64_t n_tokens = 0;
  int64_t n_expert = 0;
  int k = 0;
  bool renormalize = false;
  float moce_bonus = 0.0f;  // 0: exact routing
  int moce_protect = 0;
  const uint8_t* resident = nullptr;  // [n_expert], read when moce_bonus != 0
  int32_t* picks = nullptr;           // [n_tokens][k]
  float* weights = nullptr;           // [n_tokens][k]
};
cudaError_t launch_route(const RouteLaunch& launch, cudaStream_t stream);

// ranked[t][:count] = the top `count` experts of logits[t], best first.
cudaError_t launch_rank(const float* logits, int64_t n_tokens, int64_t n_expert, int count,
                        int32_t* ranked, cudaStream_t stream);

}  // namespace strata::cuda
