// One warp per token: lane l holds the logits of experts l, l + 32, ...; each pick is a butterfly
// arg-max over (value, lower id first) of the experts not yet taken.
#include "cuda/topk.h"

#include "cuda/device_math.h"

namespace strata::cuda {
namespace {

// Experts a lane holds: 4 up to 128 experts, 8 up to 256, 16 up to kMaxRoutedExperts.

struct Candidate {
  float value;
  int32_t expert;  // -1: none
};

__device__ bool beats(const Candidate& a, const Candidate& b) {
  if (a.expert < 0) return false;
  if (b.expert < 0) return true;
  return a.value > b.value || (a.value == b.value && a.expert < b.expert);
}

// The best expert of `values` not in `taken` (bit i: expert lane + 32 i), which is then taken.
template <int kPerLane>
__device__ int32_t take_best(const float (&values)[kPerLane], uint32_t& taken, int64_t n_expert) {
  const int lane = threadIdx.x % 32;
  Candidate best{0.0f, -1};
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int32_t e = lane + 32 * i;
    const Candidate c{values[i], e < n_expert && !(taken >> i & 1) ? e : -1};
    if (beats(c, best)) best = c;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const Candidate other{__shfl_xor_sync(0xffffffffu, best.value, offset),
                          __shfl_xor_sync(0xffffffffu, best.expert, offset)};
    if (beats(other, best)) best = other;
  }
  if (best.expert >= 0 && best.expert % 32 == lane) taken |= 1u << (best.expert / 32);
  return best.expert;
}

// values[e] of the lane that holds expert e, on every lane.
template <int kPerLane>
__device__ float value_of(const float (&values)[kPerLane], int32_t e) {
  float mine = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    if (i == e / 32) mine = values[i];
  return __shfl_sync(0xffffffffu, mine, e % 32);
}

template <int kPerLane>
__device__ void load_logits(const float* row, int64_t n_expert, float (&values)[kPerLane]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int64_t e = lane + 32 * i;
    values[i] = e < n_expert ? row[e] : 0.0f;
  }
}

// In place: exp(x - max) / sum, the sum in double (lane 0's, so every lane scales alike).
template <int kPerLane>
__device__ void softmax(float (&values)[kPerLane], int64_t n_expert) {
  const int lane = threadIdx.x % 32;
  float max = -INFINITY;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    if (lane + 32 * i < n_expert) max = fmaxf(max, values[i]);
  for (int offset = 16; offset > 0; offset /= 2)
    max = fmaxf(max, __shfl_xor_sync(0xffffffffu, max, offset));
  double sum = 0;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    if (lane + 32 * i < n_expert) {
      values[i] = exact_expf(values[i] - max);
      sum += double(values[i]);
    }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const float inverse = float(1.0 / __shfl_sync(0xffffffffu, sum, 0));
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) values[i] *= inverse;
}

template <int kPerLane>
__global__ void route_kernel(RouteLaunch launch) {
  const int64_t t = blockIdx.x;
  const int lane = threadIdx.x;
  const int k = launch.k;
  float logits[kPerLane];
  load_logits<kPerLane>(launch.logits + t * launch.n_expert, launch.n_expert, logits);
  int32_t picks[kMaxExpertsUsed];
  const bool cache_aware = launch.moce_bonus != 0.0f;
  if (cache_aware) {
    // The protected picks from the exact logits; the rest by the logits plus the bonus of
    // resident experts, the protected ones excluded.
    const int protect = max(0, min(launch.moce_protect, k));
    uint32_t taken = 0;
    for (int i = 0; i < protect; ++i)
      picks[i] = take_best<kPerLane>(logits, taken, launch.n_expert);
    float scores[kPerLane];
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int64_t e = lane + 32 * i;
      scores[i] =
          e < launch.n_expert && launch.resident[e] ? logits[i] + launch.moce_bonus : logits[i];
    }
    for (int i = protect; i < k; ++i)
      picks[i] = take_best<kPerLane>(scores, taken, launch.n_expert);
  }
  softmax<kPerLane>(logits, launch.n_expert);  // now probabilities
  if (!cache_aware) {
    uint32_t taken = 0;
    for (int i = 0; i < k; ++i) picks[i] = take_best<kPerLane>(logits, taken, launch.n_expert);
  }
  float weights[kMaxExpertsUsed];
  double sum = 0;
  for (int i = 0; i < k; ++i) {
    weights[i] = value_of<kPerLane>(logits, picks[i]);
    sum += double(weights[i]);
  }
  if (lane != 0) return;
  for (int i = 0; i < k; ++i) {
    launch.picks[t * k + i] = picks[i];
    launch.weights[t * k + i] = launch.renormalize ? weights[i] / float(sum) : weights[i];
  }
}

template <int kPerLane>
__global__ void rank_kernel(const float* logits, int64_t n_expert, int count, int32_t* ranked) {
  const int64_t t = blockIdx.x;
  float values[kPerLane];
  load_logits<kPerLane>(logits + t * n_expert, n_expert, values);
  uint32_t taken = 0;
  for (int i = 0; i < count; ++i) {
    const int32_t e = take_best<kPerLane>(values, taken, n_expert);
    if (threadIdx.x == 0) ranked[t * count + i] = e;
  }
}

}  // namespace

cudaError_t launch_route(const RouteLaunch& launch, cudaStream_t stream) {
  if (launch.n_tokens == 0) return cudaSuccess;
  const unsigned blocks = unsigned(launch.n_tokens);
  if (launch.n_expert <= 128) {
    route_kernel<4><<<blocks, 32, 0, stream>>>(launch);
  } else if (launch.n_expert <= 256) {
    route_kernel<8><<<blocks, 32, 0, stream>>>(launch);
  } else {
    route_kernel<16><<<blocks, 32, 0, stream>>>(launch);
  }
  return cudaGetLastError();
}

cudaError_t launch_rank(const float* logits, int64_t n_tokens, int64_t n_expert, int count,
                        int32_t* ranked, cudaStream_t stream) {
  if (n_tokens == 0) return cudaSuccess;
  const unsigned blocks = unsigned(n_tokens);
  if (n_expert <= 128) {
    rank_kernel<4><<<blocks, 32, 0, stream>>>(logits, n_expert, count, ranked);
  } else if (n_expert <= 256) {
    rank_kernel<8><<<blocks, 32, 0, stream>>>(logits, n_expert, count, ranked);
  } else {
    rank_kernel<16><<<blocks, 32, 0, stream>>>(logits, n_expert, count, ranked);
  }
  return cudaGetLastError();
}

}  // namespace strata::cuda
