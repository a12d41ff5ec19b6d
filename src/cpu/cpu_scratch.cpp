#include "cpu/cpu_scratch.h"

#include <algorithm>

namespace strata {
namespace {

// Counts the bytes the visitor is shown without touching any buffer.
struct ByteCounter {
  uint64_t bytes = 0;
  template <class T>
  void operator()(std::vector<T>&, uint64_t count) {
    bytes += count * sizeof(T);
  }
};

struct Allocator {
  template <class T>
  void operator()(std::vector<T>& buffer, uint64_t count) {
    std::vector<T>().swap(buffer);
    buffer.reserve(size_t(count));                     // exactly; resize() below stays within it
    if constexpr (std::is_same_v<T, uint8_t>) return;  // converted rows: shaped when converted
    buffer.resize(size_t(count));
  }
};

struct Releaser {
  template <class T>
  void operator()(std::vector<T>& buffer, uint64_t) {
    std::vector<T>().swap(buffer);
  }
};

// Bytes of `rows` rows of n_in values in the format a weight of `weight_type` multiplies.
uint64_t converted_bytes(QuantType weight_type, uint64_t rows, int64_t n_in) {
  return rows * quant_traits(quant_traits(weight_type).vec_dot_type).row_bytes(n_in);
}
QuantType activation_type(QuantType weight_type) { return quant_traits(weight_type).vec_dot_type; }

}  // namespace

template <class Visitor>
void CpuScratch::visit(const ModelShape& m, const WeightFormats& formats, const ScratchShape& s,
                       Visitor&& visitor) {
  const uint64_t T = uint64_t(s.max_tokens), E = uint64_t(m.n_embd);
  const uint64_t n_used = uint64_t(m.n_expert_used), n_expert = uint64_t(m.n_expert);
  const uint64_t q_dim = uint64_t(m.n_head * m.head_dim),
                 kv_dim = uint64_t(m.n_head_kv * m.head_dim);
  const uint64_t F = uint64_t(m.n_ff_expert), Fs = uint64_t(m.n_ff_shared);
  const uint64_t routed = T * n_used;
  for (auto* buffer : {&hidden, &normed, &lookahead, &moe_out, &attention_input, &projected})
    visitor(*buffer, T * E);
  for (auto* buffer : {&q, &attention_out}) visitor(*buffer, T * q_dim);
  for (auto* buffer : {&k, &v}) visitor(*buffer, T * kv_dim);
  for (auto* buffer : {&router_logits, &rank_logits}) visitor(*buffer, T * n_expert);
  visitor(picks, routed);
  visitor(pick_weights, routed);
  visitor(moce_scores, n_expert);
  visitor(ranked, T * n_expert);
  visitor(gate_out, routed * F);
  visitor(up_out, routed * F);
  visitor(down_out, routed * E);
  visitor(shared_gate_out, T * Fs);
  visitor(shared_up_out, T * Fs);
  visitor(shared_down_out, Fs > 0 ? T * E : 0);
  visitor(shared_scale, Fs > 0 ? T : 0);
  // Converted rows, by the formats the products take.
  std::array<bool, 32> used{};  // activation formats a layer input is converted to
  uint64_t gathered_gate_bytes = 0, gathered_up_bytes = 0, activation_bytes = 0;
  uint64_t rows_bytes = converted_bytes(formats.output, s.all_logits ? T : 1, m.n_embd);
  for (const LayerFormats& l : formats.layers) {
    for (QuantType weight : {l.q, l.k, l.v, l.router, l.gate, l.up})
      used[size_t(activation_type(weight))] = true;
    gathered_gate_bytes = std::max(gathered_gate_bytes, converted_bytes(l.gate, routed, m.n_embd));
    if (activation_type(l.up) != activation_type(l.gate))
      gathered_up_bytes = std::max(gathered_up_bytes, converted_bytes(l.up, routed, m.n_embd));
    activation_bytes = std::max(activation_bytes, converted_bytes(l.down, routed, m.n_ff_expert));
    // matmul() converts into `rows`: the output projection, the read-ahead's routers.
    rows_bytes = std::max({rows_bytes, converted_bytes(l.o, T, int64_t(q_dim)),
                           converted_bytes(l.router, T, m.n_embd)});
    if (l.shared_expert) {
      for (QuantType weight : {l.shared_gate, l.shared_up})
        used[size_t(activation_type(weight))] = true;
      used[size_t(QuantType::kF32)] = true;  // the shared expert's gate input
      rows_bytes = std::max(rows_bytes, converted_bytes(l.shared_down, T, m.n_ff_shared));
    }
  }
  // The next-expert predictor's matrices are F32.
  if (s.next_visit_scores > 0) used[size_t(activation_type(QuantType::kF32))] = true;
  for (size_t slot = 0; slot < used.size(); ++slot)
    visitor(converted[slot].bytes,
            used[slot] ? T * quant_traits(QuantType(slot)).row_bytes(m.n_embd) : 0);
  visitor(gathered_gate.bytes, gathered_gate_bytes);
  visitor(gathered_up.bytes, gathered_up_bytes);
  visitor(expert_activations.bytes, activation_bytes);
  visitor(rows.bytes, rows_bytes);
}

void CpuScratch::allocate(const ModelShape& model, const WeightFormats& formats,
                          const ScratchShape& shape, int n_threads) {
  release();
  visit(model, formats, shape, Allocator());
  attention.prepare(n_threads, LayerKvView::capacity_for(shape.n_ctx));
}

void CpuScratch::release() {
  visit(ModelShape(), WeightFormats(), ScratchShape{.max_tokens = 0}, Releaser());
  std::vector<float>().swap(row_product);
  attention.scores.clear();
}

uint64_t CpuScratch::bytes_for(const ModelShape& model, const WeightFormats& formats,
                               const ScratchShape& shape, int n_threads) {
  ByteCounter counter;
  CpuScratch().visit(model, formats, shape, counter);
  // The logits rows the caller receives (a row per token when teacher-forced, else one).
  const uint64_t logits =
      uint64_t(shape.all_logits ? shape.max_tokens : 1) * uint64_t(model.n_vocab);
  return counter.bytes + (logits + uint64_t(shape.next_visit_scores) +
                          AttentionScratch::floats_for(shape.n_ctx, n_threads)) *
                             sizeof(float);
}

}  // namespace strata
