// Matrix products of quantized weights with converted activations on the GPU, several matrices
// per launch (q, k and v; the experts of a layer), and the row dequantizer of embeddings.
//
// Every output is computed by one warp (decode: a task of at most kMatvecMaxCols tokens, the
// row's chunks spread over the lanes, then a fixed butterfly) or one thread of a 64 x 64 tile
// (prefill: chunks in order), never by atomics, so results repeat bit for bit. Which kernel a
// task gets depends on its own token count only, so grouping tasks into calls (an expert store
// handing experts out as they arrive) does not change any output.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "cuda/activation_chunks.h"
#include "cuda/formats.h"

namespace strata::cuda {

inline constexpr int64_t kMatvecMaxCols = 8;

enum class Epilogue : int32_t {
  kStore,       // y = result (+ bias)
  kAccumulate,  // y += result
  kSiluTimes,   // y = silu(gate) * result, gate indexed as y (SwiGLU's up projection)
};

// One matrix against `n_cols` consecutive activation rows from x_first:
// y[c * y_stride + r] <- sum_k W[r][k] * x[x_first + c][k] for r < n_out, c < n_cols.
struct MatmulTask {
  const uint8_t* w = nullptr;  // device memory; unused where routed_pick >= 0
  int64_t n_out = 0;
  int64_t x_first = 0;
  int64_t n_cols = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
  const float* bias = nullptr;  // [n_out] or null (kStore)
  const float* gate = nullptr;  // kSiluTimes
  Epilogue epilogue = Epilogue::kStore;
  // >= 0: the weights are those of the expert the router picked at index routed_pick of
  // MatmulRequest::experts.picks, read on the device (the host never sees the pick).
  int32_t routed_pick = -1;
};

// Where the kernels find a routed task's weights: expert picks[p]'s matrix is weights[picks[p]].
struct RoutedWeights {
  const int32_t* picks = nullptr;           // device memory
  const uint8_t* const* weights = nullptr;  // device memory, [n_expert]
};

// Tasks that share a format, a row length and an activation view.
struct MatmulRequest {
  Format format = Format::kF32;
  bool grouped_rows = false;  // Q4_0 row groups (quant/q4_0_groups.h)
  int64_t n_in = 0;
  size_t row_bytes = 0;
  ActivationRows x;
  std::span<const MatmulTask> tasks;
  RoutedWeights experts;  // for tasks with routed_pick >= 0
};

cudaError_t launch_matmul(const MatmulRequest& request, cudaStream_t stream);

// out[t][:] = row rows[t] of the matrix, dequantized as the reference dequantizer does.
cudaError_t launch_dequantize_rows(Format format, const uint8_t* w, size_t row_bytes, int64_t n_in,
                                   const int32_t* rows, int64_t n_rows, float* out,
                                   cudaStream_t stream);

}  // namespace strata::cuda
