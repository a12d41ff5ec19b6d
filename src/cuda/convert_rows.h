// Activation rows converted on the GPU to a weight format's activation format, exactly as
// quant/'s converters do (quantize_row_q8_0, _q8_1, _q8_k, _f16, _bf16): the same bytes, in the
// layout of activation_chunks.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "cuda/activation_chunks.h"

namespace strata::cuda {

struct RowRange {
  int64_t first = 0;
  int64_t count = 0;
};

// Row r of x (r in one of `ranges`) becomes stored row r of `out`. REQUIRES: out.format is
// Q8_0, Q8_1, Q8_K, F16 or BF16 (F32 activations are used as they are); out.n_in a multiple of
// its block (32, 256 for Q8_K).
struct ConvertRequest {
  const float* x = nullptr;
  int64_t x_stride = 0;
  ActivationRows out;
  std::span<const RowRange> ranges;
};

cudaError_t launch_convert_rows(const ConvertRequest& request, cudaStream_t stream);

// normed[r] = rms_norm(x[r]) * weight (the norm kernel's float operations, elementwise.h), and
// normed[r] converted as launch_convert_rows converts it into stored row r of `out`, in one
// launch, for rows r < n_rows.
struct NormAndConvertRequest {
  const float* x = nullptr;
  int64_t x_stride = 0;
  const float* weight = nullptr;
  float eps = 0;
  int64_t n_rows = 0;
  float* normed = nullptr;  // [n_rows][out.n_in]
  ActivationRows out;
};

cudaError_t launch_norm_and_convert(const NormAndConvertRequest& request, cudaStream_t stream);

}  // namespace strata::cuda
