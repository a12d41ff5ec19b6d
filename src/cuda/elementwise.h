// Row-wise and element-wise float kernels of the CUDA backend, each with the arithmetic of its
// CPU counterpart (cpu/elementwise.h): sums of squares in double, then float.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace strata::cuda {

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight for n_rows rows of n floats.
cudaError_t launch_rms_norm(const float* x, int64_t x_stride, const float* weight, int64_t n,
                            int64_t n_rows, float eps, float* out, int64_t out_stride,
                            cudaStream_t stream);

// y[i] += x[i], i < n
cudaError_t launch_add(const float* x, float* y, int64_t n, cudaStream_t stream);

// out[t][:] = sum_i weights[t * k + i] * rows[row_of_pick[t * k + i]][:], in pick order, for
// n_tokens rows of n floats.
cudaError_t launch_mix_rows(const float* rows, const int32_t* row_of_pick, const float* weights,
                            int k, int64_t n_tokens, int64_t n, float* out, cudaStream_t stream);

// out[t][:] += x[t][:] * sigmoid(gate[t]) (qwen2moe's gated shared expert), or x[t][:] alone
// when gate is null.
cudaError_t launch_add_gated(const float* x, const float* gate, int64_t n_tokens, int64_t n,
                             float* out, cudaStream_t stream);

}  // namespace strata::cuda
