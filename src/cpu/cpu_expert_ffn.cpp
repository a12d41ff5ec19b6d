// Routed and shared experts on the CPU: the tokens routed to each expert are gathered and
// multiplied as one GEMM per slice, each claimed batch of experts in one launch.
#include <algorithm>
#include <cstring>
#include <functional>

#include "cpu/cpu_backend.h"
#include "cpu/elementwise.h"

namespace strata {
namespace {

// In decode, experts of at most this many bytes are computed whole, one task each: gate, up,
// SiLU and down without a launch or a serial step between the projections (strata-tiny-moe's
// 41 KB experts). Larger experts, and batches, whose experts' row counts differ, are split into
// row tasks over two launches, which keeps the threads finishing together (whole experts made
// the tiny model's 512-token prefill ~12 % slower).
constexpr size_t kWholeExpertTaskBytes = size_t(256) << 10;

QuantType activation_type(const Matrix& w) { return quant_traits(w.type).vec_dot_type; }

// dst.row(r) = src.row(source_rows[r])
void gather_rows(ThreadPool& pool, const ConvertedRows& src, std::span<const int64_t> source_rows,
                 ConvertedRows& dst) {
  dst.type = src.type;
  dst.row_stride = src.row_stride;
  dst.n_in = src.n_in;
  dst.n_rows = int64_t(source_rows.size());
  dst.bytes.resize(src.row_stride * source_rows.size());
  // About 64 KB a range task.
  const int64_t min_rows = std::max<int64_t>(1, int64_t((size_t(64) << 10) / src.row_stride));
  pool.parallel_ranges(dst.n_rows, min_rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      std::memcpy(dst.bytes.data() + size_t(r) * src.row_stride, src.row(source_rows[size_t(r)]),
                  src.row_stride);
  });
}

// Calls activate(first, count) over every job's rows in one launch: ranges of all the jobs'
// rows, cut where one job's rows end.
void activate_rows_of(ThreadPool& pool, std::span<const ExpertJob> jobs, int64_t min_rows,
                      const std::function<void(int64_t first, int64_t count)>& activate) {
  int64_t total = 0;
  for (const ExpertJob& j : jobs) total += j.n_rows;
  pool.parallel_ranges(total, min_rows, [&](int64_t begin, int64_t end) {
    int64_t before = 0;  // rows of the jobs before j
    for (const ExpertJob& j : jobs) {
      const int64_t lo = std::max(begin, before), hi = std::min(end, before + j.n_rows);
      if (lo < hi) activate(j.first_row + lo - before, hi - lo);
      before += j.n_rows;
    }
  });
}

size_t unit_bytes(const ExpertJob& job) {
  return size_t(job.gate.n_out) * job.gate.row_bytes() + size_t(job.up.n_out) * job.up.row_bytes() +
         size_t(job.down.n_out) * job.down.row_bytes();
}

}  // namespace

void CpuBackend::gather_expert_inputs(Activations x, std::span<const int64_t> token_of_row,
                                      QuantType gate_type, QuantType up_type, QuantType down_type) {
  const QuantType gate_input = quant_traits(gate_type).vec_dot_type;
  const QuantType up_input = quant_traits(up_type).vec_dot_type;
  gather_rows(*pool_, converted(x, gate_input), token_of_row, scratch_.gathered_gate);
  if (up_input != gate_input)
    gather_rows(*pool_, converted(x, up_input), token_of_row, scratch_.gathered_up);
  reshape_rows(scratch_.expert_activations, quant_traits(down_type).vec_dot_type,
               int64_t(token_of_row.size()), shape_.n_ff_expert);
}

void CpuBackend::compute_experts(std::span<const ExpertJob> jobs) {
  if (jobs.empty()) return;
  const int64_t n_ff = shape_.n_ff_expert, n_embd = shape_.n_embd;
  const ConvertedRows& gate_input = scratch_.gathered_gate;
  const ConvertedRows& up_input =
      activation_type(jobs[0].up) == gate_input.type ? gate_input : scratch_.gathered_up;
  float *gate_out = scratch_.gate_out.data(), *up_out = scratch_.up_out.data();
  float* down_out = scratch_.down_out.data();
  ConvertedRows& activations = scratch_.expert_activations;
  auto gate_job = [&](const ExpertJob& j) -> MatmulJob {
    return {&j.gate, &gate_input, j.first_row, j.n_rows, gate_out + j.first_row * n_ff, n_ff};
  };
  auto up_job = [&](const ExpertJob& j) -> MatmulJob {
    return {&j.up, &up_input, j.first_row, j.n_rows, up_out + j.first_row * n_ff, n_ff};
  };
  auto down_job = [&](const ExpertJob& j) -> MatmulJob {
    return {&j.down, &activations, j.first_row, j.n_rows, down_out + j.first_row * n_embd, n_embd};
  };
  // SiLU(gate) * up of rows [first, first + count), in place of gate's, converted for the down
  // projection.
  auto activate = [&](int64_t first, int64_t count) {
    float* gate = gate_out + first * n_ff;
    silu_mul(gate, up_out + first * n_ff, count * n_ff, gate);
    convert_rows_here(gate_out, n_ff, first, count, activations);
  };
  const bool whole_experts =
      batch_.hidden.n_rows == 1 && unit_bytes(jobs[0]) <= kWholeExpertTaskBytes;
  if (whole_experts) {
    pool_->parallel_for(int64_t(jobs.size()), [&](int64_t i, int) {
      const ExpertJob& j = jobs[size_t(i)];
      run_matmul_here(gate_job(j));
      run_matmul_here(up_job(j));
      activate(j.first_row, j.n_rows);
      run_matmul_here(down_job(j));
    });
    return;
  }
  std::vector<MatmulJob> products;
  for (const ExpertJob& j : jobs) {
    products.push_back(gate_job(j));
    products.push_back(up_job(j));
  }
  run_matmuls(*pool_, products);
  products.clear();
  activate_rows_of(*pool_, jobs, min_rows_per_range(n_ff), activate);
  for (const ExpertJob& j : jobs) products.push_back(down_job(j));
  run_matmuls(*pool_, products);
}

std::span<const float> CpuBackend::expert_outputs(std::span<const ExpertJob> jobs) {
  const int64_t n_embd = shape_.n_embd;
  expert_rows_.clear();
  for (const ExpertJob& j : jobs) {
    const float* first = scratch_.down_out.data() + j.first_row * n_embd;
    expert_rows_.insert(expert_rows_.end(), first, first + j.n_rows * n_embd);
  }
  return expert_rows_;
}

void CpuBackend::write_expert_outputs(std::span<const ExpertJob> jobs,
                                      std::span<const float> rows) {
  const int64_t n_embd = shape_.n_embd;
  const float* from = rows.data();
  for (const ExpertJob& j : jobs) {
    std::copy(from, from + j.n_rows * n_embd, scratch_.down_out.data() + j.first_row * n_embd);
    from += j.n_rows * n_embd;
  }
}

void CpuBackend::mix_experts(std::span<const int64_t> row_of_pick, std::span<const float> weights,
                             int k, Activations moe_out) {
  const int64_t n_embd = moe_out.width;
  pool_->parallel_ranges(
      moe_out.n_rows, min_rows_per_range(k * n_embd), [&](int64_t begin, int64_t end) {
        std::fill(moe_out.data + begin * n_embd, moe_out.data + end * n_embd, 0.0f);
        // In pick order (best first), as llama.cpp sums its expert views.
        for (int64_t t = begin; t < end; ++t)
          for (int i = 0; i < k; ++i) {
            const size_t p = size_t(t * k + i);
            add_scaled(moe_out.data + t * n_embd,
                       scratch_.down_out.data() + row_of_pick[p] * n_embd, weights[p], n_embd);
          }
      });
  invalidate_converted(moe_out.data);
}

void CpuBackend::shared_expert(const SharedExpertWeights& w, Activations x, Activations moe_out) {
  const int64_t n = x.n_rows, n_embd = shape_.n_embd, n_ff = shape_.n_ff_shared;
  float *gate = scratch_.shared_gate_out.data(), *up = scratch_.shared_up_out.data();
  float *down = scratch_.shared_down_out.data(), *scale = scratch_.shared_scale.data();
  const Matrix gate_input{QuantType::kF32, reinterpret_cast<const uint8_t*>(w.gate_input.data()),
                          n_embd, 1};
  const MatmulJob jobs[] = {{&w.gate, &converted(x, activation_type(w.gate)), 0, n, gate, n_ff},
                            {&w.up, &converted(x, activation_type(w.up)), 0, n, up, n_ff},
                            {&gate_input, &converted(x, QuantType::kF32), 0, n, scale, 1}};
  run_matmuls(*pool_, jobs);
  pool_->parallel_ranges(n, min_rows_per_range(n_ff), [&](int64_t begin, int64_t end) {
    silu_mul(gate + begin * n_ff, up + begin * n_ff, (end - begin) * n_ff, gate + begin * n_ff);
  });
  matmul(*pool_, w.down, gate, n, down, scratch_.rows);
  pool_->parallel_ranges(n, min_rows_per_range(n_embd), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const float s = sigmoid(scale[t]);
      for (int64_t i = 0; i < n_embd; ++i) moe_out.data[t * n_embd + i] += down[t * n_embd + i] * s;
    }
  });
  invalidate_converted(moe_out.data);
}

}  // namespace strata
