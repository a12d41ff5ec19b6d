#include "cuda/attention.h"

namespace strata::cuda {
namespace {

constexpr int kAttentionThreads = 512;

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
  __device__ double operator()(double a, double b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Block (t, head): thread i < head_dim / 2 holds dimensions i and i + head_dim / 2, the pair
// RoPE rotates together (the block is whole warps; the others add zeros to the norm's sum).
// Heads [0, n_head) are q's, then k's, then v's.
__global__ void prepare_kernel(AttentionShape shape, AttentionInputs in, const int64_t* pos0,
                               LayerCache cache) {
  __shared__ double partial[kMaxHeadDim / 2 / 32];
  const int64_t t = blockIdx.x, head = blockIdx.y, half = shape.head_dim / 2;
  const int64_t i = threadIdx.x, pos = *pos0 + t;
  const bool active = i < half;
  const int64_t q_dim = shape.n_head * shape.head_dim, kv_dim = shape.n_head_kv * shape.head_dim;
  const bool is_q = head < shape.n_head, is_k = !is_q && head < shape.n_head + shape.n_head_kv;
  const int64_t kv_head = is_q   ? 0
                          : is_k ? head - shape.n_head
                                 : head - shape.n_head - shape.n_head_kv;
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

// e^x for x <= 0 with the float operations of the CPU's kernel (cpu/attention_avx2.cpp,
// exp_nonpositive): x = n ln2 + r, e^r by its Taylor series to r^7, 2^n through the exponent
// bits; below -87 the result is 0.
__device__ float exp_nonpositive(float x) {
  const bool underflow = x < -87.0f;
  x = fmaxf(x, -87.0f);
  const float n = rintf(__fmul_rn(x, 1.44269504f));
  float r = fmaf(-n, 0.693359375f, x);
  r = fmaf(-n, -2.12194440e-4f, r);
  float p = 1.0f / 5040;
  p = fmaf(p, r, 1.0f / 720);
  p = fmaf(p, r, 1.0f / 120);
  p = fmaf(p, r, 1.0f / 24);
  p = fmaf(p, r, 1.0f / 6);
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  const uint32_t bits = uint32_t(int(n) + 127) << 23;
  float scale;
  memcpy(&scale, &bits, 4);
  return underflow ? 0.0f : __fmul_rn(p, scale);
}

// q·k of one position in the order of the CPU's kernel (ggml's F32 dot): four 8-lane partial
// sums s_j over dimensions 32i + 8j + l, lanes combined as ((x0 + x4) + (x1 + x5)) + ((x2 + x6)
// + (x3 + x7)) with x_l = (s0 + s2) + (s1 + s3), dimensions past the last multiple of 32 added
// one by one.
__device__ float key_score(const float* query, const float* keys, int64_t stride,
                           int64_t head_dim) {
  const int64_t n_main = head_dim / 32 * 32;
  // Chain (l, j) runs over i in order, as the CPU's; each 32 dimensions' keys are loaded
  // together first, so that the loads wait once, not once per dimension.
  float s[8][4];
#pragma unroll
  for (int l = 0; l < 8; ++l)
#pragma unroll
    for (int j = 0; j < 4; ++j) s[l][j] = 0.0f;
  for (int64_t i = 0; i < n_main; i += 32) {
    float k[32];
#pragma unroll
    for (int d = 0; d < 32; ++d) k[d] = keys[(i + d) * stride];
#pragma unroll
    for (int l = 0; l < 8; ++l)
#pragma unroll
      for (int j = 0; j < 4; ++j) s[l][j] = fmaf(k[8 * j + l], query[i + 8 * j + l], s[l][j]);
  }
  float x[8];
#pragma unroll
  for (int l = 0; l < 8; ++l)
    x[l] = __fadd_rn(__fadd_rn(s[l][0], s[l][2]), __fadd_rn(s[l][1], s[l][3]));
  float out = __fadd_rn(__fadd_rn(__fadd_rn(x[0], x[4]), __fadd_rn(x[1], x[5])),
                        __fadd_rn(__fadd_rn(x[2], x[6]), __fadd_rn(x[3], x[7])));
  for (int64_t d = n_main; d < head_dim; ++d)
    out = __fadd_rn(out, __fmul_rn(keys[d * stride], query[d]));
  return out;
}

// The CPU's horizontal sum of 8 lanes: ((x0 + x4) + (x2 + x6)) + ((x1 + x5) + (x3 + x7)).
__device__ float lane_sum(const float* x) {
  return __fadd_rn(__fadd_rn(__fadd_rn(x[0], x[4]), __fadd_rn(x[2], x[6])),
                   __fadd_rn(__fadd_rn(x[1], x[5]), __fadd_rn(x[3], x[7])));
}

// Block (t, h): the scores of its positions in shared memory, their softmax, then the weighted
// values, each step in the CPU kernel's order (cpu/attention_avx2.cpp): positions j are split
// into 8 lanes by j mod 8, each lane summed in order (the exponentials' sum in double), the
// lanes then combined as the CPU combines its vector lanes.
__global__ void __launch_bounds__(kAttentionThreads)
    attention_kernel(AttentionShape shape, const float* q, const int64_t* pos0, LayerCache cache,
                     float* out) {
  extern __shared__ float shared[];
  float* query = shared;                    // [head_dim]
  float* scores = shared + shape.head_dim;  // [positions]
  __shared__ float partial_max[kAttentionThreads / 32];
  __shared__ double lane_sums[8];
  __shared__ float lanes[kAttentionThreads / 8][8 + 1];  // 16 dimensions x 8 lanes (+1: banks)
  __shared__ float inverse;
  const int64_t t = blockIdx.x, h = blockIdx.y, head_dim = shape.head_dim;
  const int64_t kv_head = h / (shape.n_head / shape.n_head_kv);
  const int64_t n_pos = *pos0 + t + 1;
  const float* q_row = q + (t * shape.n_head + h) * head_dim;
  for (int64_t d = threadIdx.x; d < head_dim; d += kAttentionThreads) query[d] = q_row[d];
  __syncthreads();

  const float* keys = cache.keys + kv_head * head_dim * cache.capacity;
  float local_max = -INFINITY;
  for (int64_t j = threadIdx.x; j < n_pos; j += kAttentionThreads) {
    scores[j] = __fmul_rn(key_score(query, keys + j, cache.capacity, head_dim), shape.scale);
    local_max = fmaxf(local_max, scores[j]);
  }
  const float max = block_reduce(local_max, partial_max, Max());
  for (int64_t j = threadIdx.x; j < n_pos; j += kAttentionThreads)
    scores[j] = exp_nonpositive(__fsub_rn(scores[j], max));
  __syncthreads();
  if (threadIdx.x < 8) {
    double sum = 0;
    for (int64_t j = threadIdx.x; j < n_pos; j += 8) sum += double(scores[j]);
    lane_sums[threadIdx.x] = sum;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double parts[4];
    for (int k = 0; k < 4; ++k) parts[k] = lane_sums[k] + lane_sums[k + 4];
    inverse = float(1.0 / ((parts[0] + parts[1]) + (parts[2] + parts[3])));
  }
  __syncthreads();
  for (int64_t j = threadIdx.x; j < n_pos; j += kAttentionThreads)
    scores[j] = __fmul_rn(scores[j], inverse);
  __syncthreads();

  // Thread (d, lane) for head_dim x 8 pairs, kAttentionThreads at a time.
  const float* values = cache.values + kv_head * cache.capacity * head_dim;
  float* y = out + (t * shape.n_head + h) * head_dim;
  for (int64_t first = 0; first < head_dim; first += kAttentionThreads / 8) {
    const int64_t d = first + threadIdx.x / 8;
    const int lane = threadIdx.x % 8;
    if (d < head_dim) {
      float acc = 0.0f;
      for (int64_t j = lane; j < n_pos; j += 8)
        acc = fmaf(values[j * head_dim + d], scores[j], acc);
      lanes[threadIdx.x / 8][lane] = acc;
    }
    __syncthreads();
    if (threadIdx.x < kAttentionThreads / 8 && first + threadIdx.x < head_dim)
      y[first + threadIdx.x] = lane_sum(lanes[threadIdx.x]);
    __syncthreads();
  }
}

}  // namespace

cudaError_t launch_prepare_attention(const AttentionShape& shape, const AttentionInputs& inputs,
                                     int64_t n_tokens, const int64_t* pos0, const LayerCache& cache,
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
                             const int64_t* pos0, int64_t positions_bound, const LayerCache& cache,
                             float* out, cudaStream_t stream) {
  const dim3 grid(unsigned(n_tokens), unsigned(shape.n_head));
  const size_t shared = size_t(positions_bound + shape.head_dim) * sizeof(float);
  attention_kernel<<<grid, kAttentionThreads, shared, stream>>>(shape, q, pos0, cache, out);
  return cudaGetLastError();
}

}  // namespace strata::cuda
