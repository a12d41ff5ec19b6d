#include "cuda/cuda_scratch.h"

#include <algorithm>

#include "base/check.h"

namespace strata::cuda {
namespace {

// Bytes a converted set takes per value it can hold, for any format: 2 (F16, BF16; Q8 quants
// take 1), the chunk scales and Q8_1 sums (4 bytes per 32 values each) and Q8_K's group sums
// (2 per 16); summed over its four buffers below.
struct ConvertedSetBytes {
  uint64_t values, d, s, bsums;
  explicit ConvertedSetBytes(uint64_t capacity)
      : values(2 * capacity), d(capacity / 8), s(capacity / 8), bsums(capacity / 8) {}
};

struct ByteCounter {
  uint64_t bytes = 0;
  void operator()(DeviceBuffer&, uint64_t count, const char*) { bytes += count; }
  void operator()(ConvertedRows&, uint64_t capacity) {
    const ConvertedSetBytes b(capacity);
    bytes += b.values + b.d + b.s + b.bsums;
  }
};

struct Allocator {
  Status status;
  void operator()(DeviceBuffer& buffer, uint64_t count, const char* what) {
    if (!status.ok()) return;
    Result<DeviceBuffer> allocated = DeviceBuffer::allocate(count, what);
    if (!allocated.ok()) {
      status = allocated.status();
      return;
    }
    buffer = std::move(allocated).value();
  }
  void operator()(ConvertedRows& set, uint64_t capacity) {
    const ConvertedSetBytes b(capacity);
    (*this)(set.values, b.values, "converted activations");
    (*this)(set.d, b.d, "converted activations");
    (*this)(set.s, b.s, "converted activations");
    (*this)(set.bsums, b.bsums, "converted activations");
    set.capacity = int64_t(capacity);
    set.source = nullptr;
  }
};

struct Releaser {
  void operator()(DeviceBuffer& buffer, uint64_t, const char*) { buffer = DeviceBuffer(); }
  void operator()(ConvertedRows& set, uint64_t) { set = ConvertedRows(); }
};

}  // namespace

ActivationRows ConvertedRows::view(Format f, int64_t rows, int64_t width) const {
  STRATA_CHECK_LE(rows * width, capacity);
  ActivationRows x;
  x.format = f;
  x.n_in = width;
  x.values = values.data();
  x.d = d.as<float>();
  x.s = s.as<float>();
  x.bsums = bsums.as<int16_t>();
  return x;
}

template <class Visitor>
void CudaScratch::visit(const ModelShape& m, int64_t tokens, Visitor&& visitor) {
  const uint64_t T = uint64_t(tokens), E = uint64_t(m.n_embd), f = sizeof(float);
  const uint64_t n_used = uint64_t(m.n_expert_used), n_expert = uint64_t(m.n_expert);
  const uint64_t q_dim = uint64_t(m.n_head * m.head_dim),
                 kv_dim = uint64_t(m.n_head_kv * m.head_dim);
  const uint64_t F = uint64_t(m.n_ff_expert), Fs = uint64_t(m.n_ff_shared);
  for (auto* buffer : {&hidden, &normed, &lookahead, &moe_out, &attention_input})
    visitor(*buffer, T * E * f, "activations");
  visitor(q, T * q_dim * f, "attention");
  visitor(attention_out, T * q_dim * f, "attention");
  visitor(k, T * kv_dim * f, "attention");
  visitor(v, T * kv_dim * f, "attention");
  visitor(router_logits, T * n_expert * f, "routing");
  visitor(route_out, 2 * T * n_used * 4, "routing");
  visitor(rank_logits, T * n_expert * f, "routing");
  visitor(ranked, T * n_expert * 4, "routing");
  visitor(gate_out, T * n_used * F * f, "the experts");
  visitor(expert_h, T * n_used * F * f, "the experts");
  visitor(down_out, T * n_used * E * f, "the experts");
  visitor(shared_gate, T * Fs * f, "the shared expert");
  visitor(shared_h, T * Fs * f, "the shared expert");
  visitor(shared_down, Fs > 0 ? T * E * f : 0, "the shared expert");
  visitor(shared_scale, Fs > 0 ? T * f : 0, "the shared expert");
  visitor(token_ids, T * 4, "token ids");
  visitor(token_of_row, T * n_used * 4, "routing");
  visitor(mix_inputs, 2 * T * n_used * 4, "routing");
  visitor(resident, n_expert, "routing");
  const uint64_t in_place = uint64_t(tokens_routed_in_place(tokens)) * n_used;
  visitor(pick_tokens, in_place * 4, "routing");
  visitor(pick_rows, in_place * 4, "routing");
  visitor(device_routes, uint64_t(m.n_layer) * 2 * in_place * 4, "routing");
  visitor(expert_tables, tokens > 0 ? uint64_t(m.n_layer) * 3 * n_expert * sizeof(void*) : 0,
          "routing");
  visitor(positions, tokens > 0 ? (kPositionSlots + 1) * sizeof(int64_t) : 0, "positions");
  for (ConvertedRows& set : general) visitor(set, T * std::max({E, q_dim, Fs}));
  visitor(gathered_gate, T * E);
  visitor(gathered_up, T * E);
  visitor(expert_input, T * n_used * F);
}

Status CudaScratch::allocate(const ModelShape& model, int64_t tokens) {
  release();
  Allocator allocator;
  visit(model, tokens, allocator);
  STRATA_RETURN_IF_ERROR(allocator.status);
  // The picks and weights, then the read-ahead's ranking (at most every expert of each row) and
  // the router's input (RouteRequest::input_to_host).
  STRATA_ASSIGN_OR_RETURN(
      route_readback,
      PinnedBuffer::allocate(
          size_t(tokens * (2 * model.n_expert_used + model.n_expert + model.n_embd) * 4),
          "routing results"));
  const size_t in_place = size_t(tokens_routed_in_place(tokens) * model.n_expert_used);
  STRATA_ASSIGN_OR_RETURN(
      routes_in_place,
      PinnedBuffer::allocate(size_t(model.n_layer) * 2 * in_place * 4, "routing results"));
  STRATA_ASSIGN_OR_RETURN(token_staging,
                          PinnedBuffer::allocate(size_t(tokens) * sizeof(int32_t), "token ids"));
  STRATA_ASSIGN_OR_RETURN(
      position_staging,
      PinnedBuffer::allocate((kPositionSlots + 1) * sizeof(int64_t), "positions"));
  STRATA_ASSIGN_OR_RETURN(logits_readback,
                          PinnedBuffer::allocate(size_t(model.n_vocab) * sizeof(float), "logits"));
  expert_tables_written.assign(size_t(model.n_layer), 0);
  std::vector<int32_t> maps(2 * in_place);
  for (size_t p = 0; p < in_place; ++p) {
    maps[p] = int32_t(p / size_t(model.n_expert_used));
    maps[in_place + p] = int32_t(p);
  }
  STRATA_RETURN_IF_ERROR(
      cuda_status(cudaMemcpy(pick_tokens.data(), maps.data(), in_place * 4, cudaMemcpyHostToDevice),
                  "copying routing maps to the device"));
  return cuda_status(
      cudaMemcpy(pick_rows.data(), maps.data() + in_place, in_place * 4, cudaMemcpyHostToDevice),
      "copying routing maps to the device");
}

void CudaScratch::release() {
  visit(ModelShape(), 0, Releaser());
  route_readback = PinnedBuffer();
  routes_in_place = PinnedBuffer();
  token_staging = PinnedBuffer();
  position_staging = PinnedBuffer();
  logits_readback = PinnedBuffer();
  expert_tables_written.clear();
  logits = DeviceBuffer();
  row_product = DeviceBuffer();
}

uint64_t CudaScratch::bytes_for(const ModelShape& model, const ScratchShape& shape) {
  ByteCounter counter;
  CudaScratch().visit(model, shape.max_tokens, counter);
  const uint64_t logits_rows = uint64_t(shape.all_logits ? shape.max_tokens : 1);
  return counter.bytes +
         (logits_rows * uint64_t(model.n_vocab) + uint64_t(shape.next_visit_scores)) *
             sizeof(float);
}

}  // namespace strata::cuda
