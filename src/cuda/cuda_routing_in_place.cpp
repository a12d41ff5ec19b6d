// Routing in place (Backend::routes_in_place): with every expert in device memory, a decode
// batch's router, top-k, routed experts and mixture run on the stream one after the other, the
// kernels reading the picks where the routing kernel wrote them, so the host queues the whole
// forward pass without waiting once a layer. Each pick is a task of one row: the products are the
// grouped path's bits (a task's kernel depends only on its row count, and an expert's rows of one
// token each give the same sums however they are grouped), and mix_rows sums in pick order as
// before. The picks reach the host with the logits, for the layer loop's observers and store.
#include "cuda/cuda_backend.h"
#include "cuda/elementwise.h"

namespace strata::cuda {

const uint8_t* const* CudaBackend::expert_table(int layer,
                                                std::span<const ExpertMatrices> experts) {
  const size_t n_expert = experts.size();
  auto* table = scratch_.expert_tables.as<const uint8_t*>() + size_t(layer) * 3 * n_expert;
  if (!scratch_.expert_tables_written[size_t(layer)]) {
    host_table_.resize(3 * n_expert);
    for (size_t e = 0; e < n_expert; ++e) {
      host_table_[e] = weights_.resolve(experts[e].gate.data);
      host_table_[n_expert + e] = weights_.resolve(experts[e].up.data);
      host_table_[2 * n_expert + e] = weights_.resolve(experts[e].down.data);
    }
    ok(cudaMemcpyAsync(table, host_table_.data(), host_table_.size() * sizeof(void*),
                       cudaMemcpyHostToDevice, stream_),
       "copying expert addresses to the device");
    scratch_.expert_tables_written[size_t(layer)] = 1;
  }
  return table;
}

void CudaBackend::run_routed(const Matrix& part, ActivationRows x, const int32_t* picks,
                             const uint8_t* const* weights, int64_t n_picks, float* y,
                             Epilogue epilogue, const float* gate) {
  if (!failure_.ok()) return;
  std::vector<MatmulTask> tasks(static_cast<size_t>(n_picks));
  for (int64_t p = 0; p < n_picks; ++p) {
    MatmulTask& task = tasks[size_t(p)];
    task.n_out = part.n_out;
    task.x_first = p;
    task.n_cols = 1;
    task.y = y + p * part.n_out;
    task.y_stride = part.n_out;
    task.epilogue = epilogue;
    task.gate = gate ? gate + p * part.n_out : nullptr;
    task.routed_pick = int32_t(p);
  }
  const MatmulRequest request{Format(uint32_t(part.type)),
                              part.grouped_rows,
                              part.n_in,
                              part.row_bytes(),
                              x,
                              tasks,
                              {picks, weights}};
  ok(launch_matmul(request, stream_), "a routed expert's product");
}

void CudaBackend::route_and_compute_experts(int layer, const Matrix& router, Activations x,
                                            const RouteRequest& request,
                                            std::span<const ExpertMatrices> experts,
                                            Activations moe_out) {
  STRATA_CHECK_LE(x.n_rows, CudaScratch::tokens_routed_in_place(allocated_tokens_));
  STRATA_CHECK_EQ(request.moce_bonus, 0.0f);
  tokens_routed_in_place_ = x.n_rows;
  if (!failure_.ok() || replaying()) return;
  const int k = request.k;
  const int64_t n_picks = x.n_rows * k, n_expert = int64_t(experts.size());
  const int64_t n_ff = shape_.n_ff_expert, n_embd = shape_.n_embd;
  // The layer's share of device_routes, which logits() copies to the host for every layer.
  int32_t* routes = scratch_.device_routes.as<int32_t>() + layer * 2 * n_picks;
  route_on_device(router, x, request, routes);
  routed_layers_in_place_ = true;
  const uint8_t* const* table = expert_table(layer, experts);
  const ExpertMatrices& shape = experts[0];
  // The gate's and up's input: x's rows, read by each pick's row through pick_tokens.
  ActivationRows gate_input = converted(x, shape.gate.type);
  ActivationRows up_input = converted(x, shape.up.type);
  for (ActivationRows* input : {&gate_input, &up_input}) {
    input->row_map = x.n_rows > 1 ? scratch_.pick_tokens.as<int32_t>() : nullptr;
    input->broadcast = x.n_rows == 1;
  }
  float *gate_out = scratch_.gate_out.as<float>(), *h = scratch_.expert_h.as<float>();
  float* down_out = scratch_.down_out.as<float>();
  run_routed(shape.gate, gate_input, routes, table, n_picks, gate_out, Epilogue::kStore, nullptr);
  run_routed(shape.up, up_input, routes, table + n_expert, n_picks, h, Epilogue::kSiluTimes,
             gate_out);
  const Format down_format = Format(uint32_t(quant_traits(shape.down.type).vec_dot_type));
  ActivationRows down_input;
  if (down_format == Format::kF32) {
    down_input.format = Format::kF32;
    down_input.n_in = n_ff;
    down_input.values = h;
  } else {
    const RowRange all{0, n_picks};
    convert_into(h, n_ff, scratch_.expert_input, down_format, n_picks, n_ff, {&all, 1});
    down_input = scratch_.expert_input.view(down_format, n_picks, n_ff);
  }
  run_routed(shape.down, down_input, routes, table + 2 * n_expert, n_picks, down_out,
             Epilogue::kStore, nullptr);
  if (!failure_.ok()) return;
  ok(launch_mix_rows(down_out, scratch_.pick_rows.as<int32_t>(),
                     reinterpret_cast<const float*>(routes + n_picks), k, x.n_rows, n_embd,
                     moe_out.data, stream_),
     "mixing the experts");
  written(moe_out.data);
}

RouteResult CudaBackend::routed_in_place(int layer) {
  const size_t count = size_t(tokens_routed_in_place_ * shape_.n_expert_used);
  if (!failure_.ok()) return meaningless_route(count);
  // logits() copied every layer's routes and waited for the copy.
  const int32_t* picks = scratch_.routes_in_place.as<int32_t>() + size_t(layer) * 2 * count;
  return {{picks, count}, {reinterpret_cast<const float*>(picks + count), count}};
}

}  // namespace strata::cuda
