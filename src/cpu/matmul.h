// Matrix products of quantized weights with float activations, over the thread pool.
//
// A weight matrix is n_out rows of n_in weights, row-major in its tensor format (GGUF's layout
// for a 2-D tensor with ne = {n_in, n_out}). Activations are [n_tokens][n_in] floats; they are
// first converted to the format's vec_dot_type (Q8_0, Q8_K, F16, ...), exactly as llama.cpp does,
// then every output is one vec_dot of a weight row with a converted activation row.
// Outputs are [n_tokens][n_out] floats.
//
// Work is split into (row block × token tile) rectangles; each output element is computed by
// one call of one kernel in a fixed order, so results do not depend on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/tensors.h"
#include "cpu/thread_pool.h"
#include "quant/quant_type.h"

namespace strata {

// Activation rows converted to one vec_dot_type.
struct ConvertedRows {
  QuantType type = QuantType::kF32;
  std::vector<uint8_t> bytes;
  size_t row_stride = 0;  // bytes between consecutive rows
  int64_t n_rows = 0;
  int64_t n_in = 0;  // values per row
  const uint8_t* row(int64_t index) const { return bytes.data() + size_t(index) * row_stride; }
};

// Shapes `out` for n_rows rows of n_in values in `type` (contents unspecified; storage reused).
void reshape_rows(ConvertedRows& out, QuantType type, int64_t n_rows, int64_t n_in);

// Converts rows [first, first + count) of x (x_stride floats apart, out's row length each)
// into the same rows of `out`. REQUIRES: out shaped for at least first + count rows.
void convert_rows(ThreadPool& pool, const float* x, int64_t x_stride, int64_t first, int64_t count,
                  ConvertedRows& out);
// The same on the calling thread, for work that is already one task of a parallel_for.
void convert_rows_here(const float* x, int64_t x_stride, int64_t first, int64_t count,
                       ConvertedRows& out);

// One product: y[t * y_stride + m] = sum_k W[m][k] * x_t[k] for t < n_tokens, m < w.n_out,
// where x_t = x.row(x_first + t). REQUIRES: x.type == vec_dot_type of w.type.
struct MatmulJob {
  const Matrix* w = nullptr;
  const ConvertedRows* x = nullptr;
  int64_t x_first = 0;
  int64_t n_tokens = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
};

// Runs all jobs in one parallel_for (the experts of one layer are one call).
void run_matmuls(ThreadPool& pool, std::span<const MatmulJob> jobs);
// Runs one job on the calling thread, for work that is already one task of a parallel_for; the
// outputs are bit for bit those of run_matmuls.
void run_matmul_here(const MatmulJob& job);

// Convenience for one dense product: converts x into `scratch` and runs one job.
void matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y,
            ConvertedRows& scratch);

}  // namespace strata
