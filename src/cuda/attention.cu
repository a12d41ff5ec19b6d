#include "cuda/attention.h"

namespace strata::cuda {
namespace {

constexpr int kAttentionThreads = 128;

// Sums and maxima over a block, combined in a fixed order (warps by butterfly, then the warps
// in order by thread 0).
template <class T, class Op>
__device__ T block_reduce(T value, T* shared, Op op) {
  for (int offset = 16; offset > 0; offset /= 2)
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n_warps = int((blockDim.x + 31) / 32);
  __syncthreads();  // `shared` may still be read from the previous reduction
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    T total = shared[0];
    for (int w = 1; w < n_warps; ++w) total = op(total, shared[w]);
    shared[0] = total;
  }
  __syncthreads();
  return shared[0];
}

struct Add {
  template <class T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Block (t, head): thread i < head_dim / 2 holds dimensions i and i + head_dim / 2, the pair
// RoPE rotates together (the block is whole warps; the others add zeros to the norm's sum).
// Heads [0, n_head) are q's, then k's, then v's.
__global__ void prepare_kernel(AttentionShape shape, AttentionInputs in, int64_t pos0,
                               LayerCache cache) {
  __shared__ double partial[kMaxHeadDim / 2 / 32];
  const int64_t t = blockIdx.x, head = blockIdx.y, half = shape.head_dim / 2;
  const int64_t i = threadIdx.x, pos = pos0 + t;
  const bool active = i < half;
  const int64_t q_dim = shape.n_head * shape.head_dim, kv_dim = shape.n_head_kv * shape.head_dim;
  const bool is_q = head < shape.n_head, is_k = !is_q && head < shape.n_head + shape.n_head_kv;
  const int64_t kv_head =
      is_q ? 0 : is_k ? head - shape.n_head : head - shape.n_head - shape.n_head_kv;
  if (!is_q && !is_k) {  // v: stored as it is
    if (!active) return;
    const float* v = in.v + t * kv_dim + kv_head * shape.head_dim;
    float* stored = cache.values + (kv_head * cache.capacity + pos) * shape.head_dim;
    stored[i] = v[i];
    stored[i + half] = v[i + half];
    return;
  }
  float* vec = is_q ? in.q + t * q_dim + head * shape.head_dim
                    : in.k + t * kv_dim + kv_head * shape.head_dim;
  float x0 = active ? vec[i] : 0.0f, x1 = active ? vec[i + half] : 0.0f;
  const float* norm = is_q ? in.q_norm : in.k_norm;
  if (norm) {
    const double sum = block_reduce(double(x0 * x0) + double(x1 * x1), partial, Add());
    const float mean = float(sum / double(shape.head_dim));
    const float scale = 1.0f / sqrtf(mean + shape.rms_eps);
    if (active) {
      x0 = (x0 * scale) * norm[i];
      x1 = (x1 * scale) * norm[i + half];
    }
  }
  if (!active) return;
  const float c = in.rope_cos[pos * half + i], s = in.rope_sin[pos * half + i];
  const float r0 = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
  const float r1 = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
  if (is_q) {
    vec[i] = r0;
    vec[i + half] = r1;
  } else {
    float* keys = cache.keys + kv_head * shape.head_dim * cache.capacity + pos;
    keys[i * cache.capacity] = r0;
    keys[(i + half) * cache.capacity] = r1;
  }
}

// Block (t, h): the scores of its positions in shared memory, their softmax, then a thread per
// output dimension summing over the positions in order.
__global__ void __launch_bounds__(kAttentionThreads)
    attention_kernel(AttentionShape shape, const float* q, int64_t pos0, LayerCache cache,
                     float* out) {
  extern __shared__ float shared[];
  float* query = shared;                     // [head_dim]
  float* scores = shared + shape.head_dim;   // [capacity]
  __shared__ double partial_sum[kAttentionThreads / 32];
  __shared__ float partial_max[kAttentionThreads / 32];
  const int64_t t = blockIdx.x, h = blockIdx.y, head_dim = shape.head_dim;
  const int64_t kv_head = h / (shape.n_head / shape.n_head_kv);
  const int64_t n_pos = pos0 + t + 1;
  const float* q_row = q + (t * shape.n_head + h) * head_dim;
  for (int64_t d = threadIdx.x; d < head_dim; d += kAttentionThreads) query[d] = q_row[d];
  __syncthreads();

  const float* keys = cache.keys + kv_head * head_dim * cache.capacity;
  float local_max = -INFINITY;
  for (int64_t j = threadIdx.x; j < n_pos; j += kAttentionThreads) {
    float sum = 0.0f;
    for (int64_t d = 0; d < head_dim; ++d) sum += query[d] * keys[d * cache.capacity + j];
    scores[j] = sum * shape.scale;
    local_max = fmaxf(local_max, scores[j]);
  }
  const float max = block_reduce(local_max, partial_max, Max());
  double local_sum = 0;
  for (int64_t j = threadIdx.x; j < n_pos; j += kAttentionThreads) {
    scores[j] = expf(scores[j] - max);
    local_sum += double(scores[j]);
  }
  const float inverse = float(1.0 / block_reduce(local_sum, partial_sum, Add()));
  for (int64_t j = threadIdx.x; j < n_pos; j += kAttentionThreads) scores[j] *= inverse;
  __syncthreads();

  const float* values = cache.values + kv_head * cache.capacity * head_dim;
  float* y = out + (t * shape.n_head + h) * head_dim;
  for (int64_t d = threadIdx.x; d < head_dim; d += kAttentionThreads) {
    float sum = 0.0f;
    for (int64_t j = 0; j < n_pos; ++j) sum += scores[j] * values[j * head_dim + d];
    y[d] = sum;
  }
}

}  // namespace

cudaError_t launch_prepare_attention(const AttentionShape& shape, const AttentionInputs& inputs,
                                     int64_t n_tokens, int64_t pos0, const LayerCache& cache,
                                     cudaStream_t stream) {
  const dim3 grid(unsigned(n_tokens), unsigned(shape.n_head + 2 * shape.n_head_kv));
  const unsigned threads = unsigned((shape.head_dim / 2 + 31) / 32 * 32);
  prepare_kernel<<<grid, threads, 0, stream>>>(shape, inputs, pos0, cache);
  return cudaGetLastError();
}

size_t attention_shared_bytes(int64_t capacity, int64_t head_dim) {
  return size_t(capacity + head_dim) * sizeof(float);
}

cudaError_t allow_attention_shared_bytes(size_t bytes) {
  return cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              int(bytes));
}

cudaError_t launch_attention(const AttentionShape& shape, const float* q, int64_t n_tokens,
                             int64_t pos0, const LayerCache& cache, float* out,
                             cudaStream_t stream) {
  const dim3 grid(unsigned(n_tokens), unsigned(shape.n_head));
  const size_t shared = size_t(pos0 + n_tokens + shape.head_dim) * sizeof(float);
  attention_kernel<<<grid, kAttentionThreads, shared, stream>>>(shape, q, pos0, cache, out);
  return cudaGetLastError();
}

}  // namespace strata::cuda
