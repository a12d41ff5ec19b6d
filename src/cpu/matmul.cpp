#include "cpu/matmul.h"

#include <algorithm>

#include "base/check.h"

namespace strata {
namespace {

// Rows per task: small enough for ~8 tasks per thread on a decode-sized matrix (load balance),
// large enough that the atomic hand-out is noise.
constexpr int64_t kRowsPerTask = 16;
// Tokens per task: 64 converted Q8_0 rows of a 2048-wide model are ~70 KB, which stays in L2
// while the task's weight rows stream through L1.
constexpr int64_t kTokensPerTask = 64;

struct Tile {
  int job;
  int64_t row_begin, row_end, token_begin, token_end;
};

}  // namespace

void convert_rows(ThreadPool& pool, const float* x, int64_t n_rows, int64_t n_in, int64_t x_stride,
                  QuantType type, ConvertedRows& out) {
  const QuantTraits& traits = quant_traits(type);
  STRATA_CHECK_EQ(n_in % traits.block_size, 0);
  out.type = type;
  out.n_rows = n_rows;
  out.row_stride = traits.row_bytes(n_in);
  out.bytes.resize(out.row_stride * size_t(n_rows));
  auto convert = [&](int64_t r, int) {
    traits.quantize_row(x + r * x_stride, out.bytes.data() + size_t(r) * out.row_stride, n_in);
  };
  if (n_rows < 4) {
    for (int64_t r = 0; r < n_rows; ++r) convert(r, 0);
  } else {
    pool.parallel_for(n_rows, convert);
  }
}

void run_matmuls(ThreadPool& pool, std::span<const MatmulJob> jobs) {
  std::vector<Tile> tiles;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const MatmulJob& job = jobs[j];
    STRATA_CHECK(job.x->type == quant_traits(job.w->type).vec_dot_type);
    for (int64_t t = 0; t < job.n_tokens; t += kTokensPerTask)
      for (int64_t r = 0; r < job.w->n_out; r += kRowsPerTask)
        tiles.push_back({int(j), r, std::min(r + kRowsPerTask, job.w->n_out), t,
                         std::min(t + kTokensPerTask, job.n_tokens)});
  }
  pool.parallel_for(int64_t(tiles.size()), [&](int64_t index, int) {
    const Tile& tile = tiles[size_t(index)];
    const MatmulJob& job = jobs[size_t(tile.job)];
    const VecDotFn vec_dot = quant_traits(job.w->type).vec_dot();
    const int n_cols = int(tile.token_end - tile.token_begin);
    const uint8_t* x = job.x->row(job.x_first + tile.token_begin);
    float out[kTokensPerTask];
    for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
      vec_dot(job.w->n_in, job.w->row(r), x, job.x->row_stride, n_cols, out);
      for (int c = 0; c < n_cols; ++c) job.y[(tile.token_begin + c) * job.y_stride + r] = out[c];
    }
  });
}

void matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y,
            ConvertedRows& scratch) {
  convert_rows(pool, x, n_tokens, w.n_in, w.n_in, quant_traits(w.type).vec_dot_type, scratch);
  const MatmulJob job{&w, &scratch, 0, n_tokens, y, w.n_out};
  run_matmuls(pool, {&job, 1});
}

}  // namespace strata
