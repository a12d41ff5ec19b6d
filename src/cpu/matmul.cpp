#include "cpu/matmul.h"

#include <algorithm>

#include "base/check.h"
#include "cpu/kernels/format_kernels.h"
#include "cpu/kernels/q4_0_groups.h"

namespace strata {
namespace {

// Weight bytes per task: about kTasksPerThread tasks per thread over all of a call's weights,
// at least a minimum (so that the hand-out and the per-task setup are noise) and at most
// kMaxTaskBytes: the pool hands tasks out in guided runs, so the end of a call is single tasks,
// and small ones keep the threads finishing together (64 rather than 256 rows of a 30B-A3B
// expert, 72 against 288 KB: 4 of 5 alternated runs faster). Bytes rather than rows, so that
// short rows (strata-tiny-moe's down projections are 36 bytes) do not make tiny tasks.
// The minimum is larger for a single token, whose task reads each weight byte once: 4 KB is a
// fraction of a microsecond, about what handing it out costs. strata-tiny-moe decodes its
// 27-216 KB launches in 3-16 tasks instead of 16-18: 0.681 -> 0.631 ms a token (medians of 18
// rounds in rotated order), while prefill, whose tasks use each byte for up to 64 tokens,
// keeps 4 KB.
constexpr size_t kMinTaskBytes = size_t(4) << 10;
constexpr size_t kMinSingleTokenTaskBytes = size_t(32) << 10;
constexpr size_t kMaxTaskBytes = size_t(64) << 10;
constexpr int64_t kTasksPerThread = 8;
// Tokens per task: 64 converted Q8_0 rows of a 2048-wide model are ~70 KB, which stays in L2
// while the task's weight rows stream through L1.
constexpr int64_t kTokensPerTask = 64;

struct Tile {
  int job;
  int64_t row_begin, row_end, token_begin, token_end;
};

size_t task_bytes(std::span<const MatmulJob> jobs, int n_threads) {
  size_t total = 0;
  bool single_tokens = true;
  for (const MatmulJob& job : jobs) {
    total += size_t(job.w->n_out) * job.w->row_bytes();
    single_tokens = single_tokens && job.n_tokens == 1;
  }
  return std::clamp(total / size_t(n_threads * kTasksPerThread),
                    single_tokens ? kMinSingleTokenTaskBytes : kMinTaskBytes, kMaxTaskBytes);
}

// Whole groups of four where possible: the rows kernels compute four rows at a time; grouped
// rows come in whole groups.
int64_t rows_per_task(size_t bytes, const Matrix& w) {
  const int64_t rows = std::max<int64_t>(1, int64_t(bytes / w.row_bytes()));
  if (w.grouped_rows)
    return std::max<int64_t>(kQ4_0GroupRows, rows / kQ4_0GroupRows * kQ4_0GroupRows);
  return rows >= 4 ? rows / 4 * 4 : rows;
}

// Puts rows as the file has them into the order grouped_rows says, in the matrix's memory,
// which rearrange_before_use gives this call.
void rearrange_rows(const Matrix& w, int64_t first_row, int64_t n_rows) {
  auto* rows = const_cast<uint8_t*>(w.row(first_row));
  if (w.grouped_rows)
    group_q4_0_rows(rows, w.n_in, n_rows);
  else
    ungroup_q4_0_rows(rows, w.n_in, n_rows);
}

// Whether a job's tiles partition its grouped rows (one token range), so that each can group
// its own while they are in its cache.
bool tiles_group_their_rows(const MatmulJob& job) {
  return job.w->grouped_rows && job.n_tokens >= 1 && job.n_tokens <= kTokensPerTask;
}

// Tiles group their own rows before using them, unless several tiles (token ranges) share those
// rows, or none uses them, or the rows are to be ungrouped (the tiles' rows need not be whole
// groups then): those matrices are rearranged here first, a group per task.
void rearrange_before_tiles(ThreadPool& pool, std::span<const MatmulJob> jobs) {
  for (const MatmulJob& job : jobs) {
    if (!job.w->rearrange_before_use || tiles_group_their_rows(job)) continue;
    pool.parallel_for(job.w->n_out / kQ4_0GroupRows, [&](int64_t group, int) {
      rearrange_rows(*job.w, group * kQ4_0GroupRows, kQ4_0GroupRows);
    });
  }
}

// The outputs of one tile: its rows for its tokens.
void compute_tile(const MatmulJob& job, const FormatKernels& kernels, const Tile& tile) {
  const int n_cols = int(tile.token_end - tile.token_begin);
  const uint8_t* x = job.x->row(job.x_first + tile.token_begin);
  const size_t row_bytes = job.w->row_bytes();
  float* y = job.y + tile.token_begin * job.y_stride + tile.row_begin;
  // Grouped rows: one kernel for decode and prefill, whose bits do not depend on n_cols.
  if (job.w->grouped_rows) {
    if (job.w->rearrange_before_use && tiles_group_their_rows(job))
      rearrange_rows(*job.w, tile.row_begin, tile.row_end - tile.row_begin);
    vec_dot_q4_0_groups_avx512(job.w->n_in, job.w->row(tile.row_begin),
                               int((tile.row_end - tile.row_begin) / kQ4_0GroupRows), x,
                               job.x->row_stride, n_cols, y, size_t(job.y_stride));
    return;
  }
  // One token (decode): the tile's rows in one call, straight into y's contiguous row.
  if (n_cols == 1 && kernels.vec_dot_rows != nullptr) {
    kernels.vec_dot_rows(job.w->n_in, job.w->row(tile.row_begin), row_bytes,
                         int(tile.row_end - tile.row_begin), x, y);
    return;
  }
  float out[kTokensPerTask];
  for (int64_t r = tile.row_begin; r < tile.row_end; ++r) {
    kernels.vec_dot(job.w->n_in, job.w->data + size_t(r) * row_bytes, x, job.x->row_stride, n_cols,
                    out);
    for (int c = 0; c < n_cols; ++c) job.y[(tile.token_begin + c) * job.y_stride + r] = out[c];
  }
}

}  // namespace

void reshape_rows(ConvertedRows& out, QuantType type, int64_t n_rows, int64_t n_in) {
  const QuantTraits& traits = quant_traits(type);
  STRATA_CHECK_EQ(n_in % traits.block_size, 0);
  out.type = type;
  out.n_in = n_in;
  out.n_rows = n_rows;
  out.row_stride = traits.row_bytes(n_in);
  if (out.bytes.size() < out.row_stride * size_t(n_rows))
    out.bytes.resize(out.row_stride * size_t(n_rows));
}

void convert_rows_here(const float* x, int64_t x_stride, int64_t first, int64_t count,
                       ConvertedRows& out) {
  STRATA_CHECK_LE(first + count, out.n_rows);
  const QuantizeRowFn quantize_row = format_kernels(out.type).quantize_row;
  for (int64_t r = first; r < first + count; ++r)
    quantize_row(x + r * x_stride, out.bytes.data() + size_t(r) * out.row_stride, out.n_in);
}

void convert_rows(ThreadPool& pool, const float* x, int64_t x_stride, int64_t first, int64_t count,
                  ConvertedRows& out) {
  if (count < 4) return convert_rows_here(x, x_stride, first, count, out);
  pool.parallel_for(count,
                    [&](int64_t r, int) { convert_rows_here(x, x_stride, first + r, 1, out); });
}

void run_matmuls(ThreadPool& pool, std::span<const MatmulJob> jobs) {
  // Reused across calls (a thread_local would be another thread's inside the workers, so the
  // lambda below sees these through plain references).
  thread_local std::vector<Tile> tile_storage;
  thread_local std::vector<const FormatKernels*> kernel_storage;
  std::vector<Tile>& tiles = tile_storage;
  std::vector<const FormatKernels*>& kernels = kernel_storage;
  tiles.clear();
  kernels.clear();
  const size_t bytes = task_bytes(jobs, pool.size());
  rearrange_before_tiles(pool, jobs);
  for (size_t j = 0; j < jobs.size(); ++j) {
    const MatmulJob& job = jobs[j];
    STRATA_CHECK(job.x->type == quant_traits(job.w->type).vec_dot_type);
    STRATA_CHECK(!job.w->grouped_rows || groups_rows(job.w->type, job.w->n_out));
    kernels.push_back(&format_kernels(job.w->type));
    const int64_t rows = rows_per_task(bytes, *job.w);
    for (int64_t t = 0; t < job.n_tokens; t += kTokensPerTask)
      for (int64_t r = 0; r < job.w->n_out; r += rows)
        tiles.push_back({int(j), r, std::min(r + rows, job.w->n_out), t,
                         std::min(t + kTokensPerTask, job.n_tokens)});
  }
  pool.parallel_for(int64_t(tiles.size()), [&](int64_t index, int) {
    const Tile& tile = tiles[size_t(index)];
    compute_tile(jobs[size_t(tile.job)], *kernels[size_t(tile.job)], tile);
  });
}

void run_matmul_here(const MatmulJob& job) {
  STRATA_CHECK(job.x->type == quant_traits(job.w->type).vec_dot_type);
  STRATA_CHECK(!job.w->grouped_rows || groups_rows(job.w->type, job.w->n_out));
  if (job.w->rearrange_before_use && !tiles_group_their_rows(job))
    rearrange_rows(*job.w, 0, job.w->n_out);
  const FormatKernels& kernels = format_kernels(job.w->type);
  for (int64_t t = 0; t < job.n_tokens; t += kTokensPerTask)
    compute_tile(job, kernels, {0, 0, job.w->n_out, t, std::min(t + kTokensPerTask, job.n_tokens)});
}

void matmul(ThreadPool& pool, const Matrix& w, const float* x, int64_t n_tokens, float* y,
            ConvertedRows& scratch) {
  reshape_rows(scratch, quant_traits(w.type).vec_dot_type, n_tokens, w.n_in);
  convert_rows(pool, x, w.n_in, 0, n_tokens, scratch);
  const MatmulJob job{&w, &scratch, 0, n_tokens, y, w.n_out};
  run_matmuls(pool, {&job, 1});
}

}  // namespace strata
