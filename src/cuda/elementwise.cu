#include "cuda/elementwise.h"

#include "cuda/device_math.h"
#include "cuda/rms_norm_row.h"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kNormThreads)
    rms_norm_kernel(const float* x, int64_t x_stride, const float* weight, int64_t n, float eps,
                    float* out, int64_t out_stride) {
  __shared__ double partial[kNormThreads / 32];
  rms_norm_row(x + int64_t(blockIdx.x) * x_stride, weight, n, eps,
               out + int64_t(blockIdx.x) * out_stride, partial);
}

__global__ void add_kernel(const float* x, float* y, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) y[i] += x[i];
}

__global__ void mix_rows_kernel(const float* rows, const int32_t* row_of_pick, const float* weights,
                                int k, int64_t n, float* out) {
  const int64_t t = blockIdx.y;
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  float sum = 0.0f;
  for (int p = 0; p < k; ++p)
    sum += rows[int64_t(row_of_pick[t * k + p]) * n + i] * weights[t * k + p];
  out[t * n + i] = sum;
}

__global__ void add_gated_kernel(const float* x, const float* gate, int64_t n, float* out) {
  const int64_t t = blockIdx.y;
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float scale = gate ? 1.0f / (1.0f + exact_expf(-gate[t])) : 1.0f;
  out[t * n + i] += x[t * n + i] * scale;
}

unsigned blocks_for(int64_t n) { return unsigned((n + kThreads - 1) / kThreads); }

}  // namespace

cudaError_t launch_rms_norm(const float* x, int64_t x_stride, const float* weight, int64_t n,
                            int64_t n_rows, float eps, float* out, int64_t out_stride,
                            cudaStream_t stream) {
  if (n_rows == 0) return cudaSuccess;
  rms_norm_kernel<<<unsigned(n_rows), kNormThreads, 0, stream>>>(x, x_stride, weight, n, eps, out,
                                                                 out_stride);
  return cudaGetLastError();
}

cudaError_t launch_add(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t launch_mix_rows(const float* rows, const int32_t* row_of_pick, const float* weights,
                            int k, int64_t n_tokens, int64_t n, float* out, cudaStream_t stream) {
  if (n_tokens == 0) return cudaSuccess;
  mix_rows_kernel<<<dim3(blocks_for(n), unsigned(n_tokens)), kThreads, 0, stream>>>(
      rows, row_of_pick, weights, k, n, out);
  return cudaGetLastError();
}

cudaError_t launch_add_gated(const float* x, const float* gate, int64_t n_tokens, int64_t n,
                             float* out, cudaStream_t stream) {
  if (n_tokens == 0) return cudaSuccess;
  add_gated_kernel<<<dim3(blocks_for(n), unsigned(n_tokens)), kThreads, 0, stream>>>(x, gate, n,
                                                                                     out);
  return cudaGetLastError();
}

}  // namespace strata::cuda
