// Routed and shared experts on the GPU. The gathered input is the FFN input itself, read through
// a row map (token_of_row), so nothing is copied; each claimed batch of experts is three launches:
// the gate projections, the up projections with SiLU(gate) applied in their epilogue, and the
// down projections, after the activations are converted for them.
#include <cstring>
#include <vector>

#include "cuda/cuda_backend.h"
#include "cuda/elementwise.h"

namespace strata::cuda {

void CudaBackend::gather_expert_inputs(Activations x, std::span<const int64_t> token_of_row,
                                       QuantType gate_type, QuantType up_type,
                                       QuantType down_type) {
  down_input_type_ = down_type;
  if (!failure_.ok()) return;
  const int32_t* row_map = nullptr;
  if (x.n_rows > 1) {
    host_ints_.assign(token_of_row.begin(), token_of_row.end());
    upload(std::span<const int32_t>(host_ints_), scratch_.token_of_row,
           "copying expert rows to the device");
    row_map = scratch_.token_of_row.as<int32_t>();
  }
  auto gather = [&](QuantType type, ConvertedRows& set) {
    const Format format = Format(uint32_t(quant_traits(type).vec_dot_type));
    ActivationRows rows;
    if (format == Format::kF32) {
      rows.format = Format::kF32;
      rows.n_in = x.width;
      rows.values = x.data;
    } else {
      const RowRange all{0, x.n_rows};
      convert_into(x.data, x.width, set, format, x.n_rows, x.width, {&all, 1});
      rows = set.view(format, x.n_rows, x.width);
    }
    rows.row_map = row_map;
    rows.broadcast = x.n_rows == 1;
    return rows;
  };
  gathered_gate_ = gather(gate_type, scratch_.gathered_gate);
  gathered_up_ = quant_traits(up_type).vec_dot_type == quant_traits(gate_type).vec_dot_type
                     ? gathered_gate_
                     : gather(up_type, scratch_.gathered_up);
}

void CudaBackend::compute_experts(std::span<const ExpertJob> jobs) {
  if (jobs.empty() || !failure_.ok()) return;
  const int64_t n_ff = shape_.n_ff_expert, n_embd = shape_.n_embd;
  float *gate_out = scratch_.gate_out.as<float>(), *h = scratch_.expert_h.as<float>();
  float* down_out = scratch_.down_out.as<float>();
  std::vector<Product> gates, ups, downs;
  std::vector<RowRange> rows;
  for (const ExpertJob& j : jobs) {
    const int64_t first = j.first_row;
    gates.push_back({&j.gate, gathered_gate_,
                     task_for(j.gate, first, j.n_rows, gate_out + first * n_ff, n_ff)});
    Product up{&j.up, gathered_up_, task_for(j.up, first, j.n_rows, h + first * n_ff, n_ff)};
    up.task.epilogue = Epilogue::kSiluTimes;
    up.task.gate = gate_out + first * n_ff;
    ups.push_back(up);
    rows.push_back({first, j.n_rows});
  }
  run(gates);
  run(ups);
  const Format down_format = Format(uint32_t(quant_traits(down_input_type_).vec_dot_type));
  ActivationRows input;
  if (down_format == Format::kF32) {
    input.format = Format::kF32;
    input.n_in = n_ff;
    input.values = h;
  } else {
    const int64_t total_rows = batch_.hidden.n_rows * shape_.n_expert_used;
    convert_into(h, n_ff, scratch_.expert_input, down_format, total_rows, n_ff, rows);
    input = scratch_.expert_input.view(down_format, total_rows, n_ff);
  }
  for (const ExpertJob& j : jobs)
    downs.push_back(
        {&j.down, input,
         task_for(j.down, j.first_row, j.n_rows, down_out + j.first_row * n_embd, n_embd)});
  run(downs);
}

std::span<const float> CudaBackend::expert_outputs(std::span<const ExpertJob> jobs) {
  const int64_t n_embd = shape_.n_embd;
  int64_t total = 0;
  for (const ExpertJob& j : jobs) total += j.n_rows;
  expert_rows_.assign(size_t(total * n_embd), 0.0f);
  if (!failure_.ok()) return expert_rows_;
  const WaitClock clock(device_wait_ms_);  // into pageable memory: the copies have run on return
  float* to = expert_rows_.data();
  for (const ExpertJob& j : jobs) {
    if (!ok(cudaMemcpyAsync(to, scratch_.down_out.as<float>() + j.first_row * n_embd,
                            size_t(j.n_rows * n_embd) * sizeof(float), cudaMemcpyDeviceToHost,
                            stream_),
            "copying expert outputs to the host"))
      break;
    to += j.n_rows * n_embd;
  }
  return expert_rows_;
}

void CudaBackend::write_expert_outputs(std::span<const ExpertJob> jobs,
                                       std::span<const float> rows) {
  if (!failure_.ok() || jobs.empty()) return;
  if (expert_rows_copied_) {
    const WaitClock clock(device_wait_ms_);
    if (!ok(cudaEventSynchronize(expert_rows_copied_), "copying expert outputs to the device"))
      return;
  } else if (!ok(cudaEventCreateWithFlags(&expert_rows_copied_, cudaEventDisableTiming),
                 "copying expert outputs to the device")) {
    return;
  }
  if (expert_rows_staging_.bytes() < rows.size_bytes()) {
    Result<PinnedBuffer> staging = PinnedBuffer::allocate(rows.size_bytes(), "expert outputs");
    if (!ok(staging.status())) return;
    expert_rows_staging_ = std::move(staging).value();
  }
  std::memcpy(expert_rows_staging_.data(), rows.data(), rows.size_bytes());
  const int64_t n_embd = shape_.n_embd;
  const float* from = expert_rows_staging_.as<float>();
  for (const ExpertJob& j : jobs) {
    if (!ok(cudaMemcpyAsync(scratch_.down_out.as<float>() + j.first_row * n_embd, from,
                            size_t(j.n_rows * n_embd) * sizeof(float), cudaMemcpyHostToDevice,
                            stream_),
            "copying expert outputs to the device"))
      return;
    from += j.n_rows * n_embd;
  }
  ok(cudaEventRecord(expert_rows_copied_, stream_), "copying expert outputs to the device");
}

void CudaBackend::mix_experts(std::span<const int64_t> row_of_pick, std::span<const float> weights,
                              int k, Activations moe_out) {
  if (!failure_.ok()) return;
  // One copy: the rows, then the weights as their bits.
  const size_t count = row_of_pick.size();
  host_ints_.resize(2 * count);
  for (size_t i = 0; i < count; ++i) {
    host_ints_[i] = int32_t(row_of_pick[i]);
    std::memcpy(&host_ints_[count + i], &weights[i], sizeof(float));
  }
  upload(std::span<const int32_t>(host_ints_), scratch_.mix_inputs, "copying mixture weights");
  const int32_t* device_rows = scratch_.mix_inputs.as<int32_t>();
  ok(launch_mix_rows(scratch_.down_out.as<float>(), device_rows,
                     reinterpret_cast<const float*>(device_rows + count), k, moe_out.n_rows,
                     moe_out.width, moe_out.data, stream_),
     "mixing the experts");
  written(moe_out.data);
}

void CudaBackend::shared_expert(const SharedExpertWeights& w, Activations x, Activations moe_out) {
  if (!failure_.ok() || replaying()) return;
  const int64_t n = x.n_rows, n_embd = shape_.n_embd, n_ff = shape_.n_ff_shared;
  float *gate = scratch_.shared_gate.as<float>(), *h = scratch_.shared_h.as<float>();
  float *down = scratch_.shared_down.as<float>(), *scale = scratch_.shared_scale.as<float>();
  const Matrix gate_input{QuantType::kF32, reinterpret_cast<const uint8_t*>(w.gate_input.data()),
                          n_embd, 1};
  std::vector<Product> first{
      {&w.gate, converted(x, w.gate.type), task_for(w.gate, 0, n, gate, n_ff)}};
  if (!w.gate_input.empty())
    first.push_back(
        {&gate_input, converted(x, QuantType::kF32), task_for(gate_input, 0, n, scale, 1)});
  run(first);
  Product up{&w.up, converted(x, w.up.type), task_for(w.up, 0, n, h, n_ff)};
  up.task.epilogue = Epilogue::kSiluTimes;
  up.task.gate = gate;
  run({&up, 1});
  written(h);
  const Activations activations{h, n, n_ff};
  const Product projection{&w.down, converted(activations, w.down.type),
                           task_for(w.down, 0, n, down, n_embd)};
  run({&projection, 1});
  ok(launch_add_gated(down, w.gate_input.empty() ? nullptr : scale, n, n_embd, moe_out.data,
                      stream_),
     "the shared expert");
  written(moe_out.data);
}

}  // namespace strata::cuda
