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
    buffer.reserve(size_t(count));  // exactly; resize() below stays within it
    buffer.resize(size_t(count));
  }
};

struct Releaser {
  template <class T>
  void operator()(std::vector<T>& buffer, uint64_t) {
    std::vector<T>().swap(buffer);
  }
};

// Converted rows: values a set of rows holds at most, counted at 4 bytes (F32) each.
uint64_t converted_values(const ModelShape& m, const ScratchShape& s) {
  const uint64_t T = uint64_t(s.max_tokens), E = uint64_t(m.n_embd);
  const uint64_t routed = T * uint64_t(m.n_expert_used);
  const uint64_t q_dim = uint64_t(m.n_head * m.head_dim), Fs = uint64_t(m.n_ff_shared);
  return CpuScratch::kConvertedFormats * T * E + 2 * routed * E + routed * uint64_t(m.n_ff_expert) +
         T * std::max({E, q_dim, Fs});
}

}  // namespace

template <class Visitor>
void CpuScratch::visit(const ModelShape& m, const ScratchShape& s, Visitor&& visitor) {
  const uint64_t T = uint64_t(s.max_tokens), E = uint64_t(m.n_embd);
  const uint64_t n_used = uint64_t(m.n_expert_used), n_expert = uint64_t(m.n_expert);
  const uint64_t q_dim = uint64_t(m.n_head * m.head_dim), kv_dim = uint64_t(m.n_head_kv * m.head_dim);
  const uint64_t F = uint64_t(m.n_ff_expert), Fs = uint64_t(m.n_ff_shared);
  for (auto* buffer : {&hidden, &normed, &lookahead, &moe_out, &attention_input, &projected})
    visitor(*buffer, T * E);
  for (auto* buffer : {&q, &attention_out}) visitor(*buffer, T * q_dim);
  for (auto* buffer : {&k, &v}) visitor(*buffer, T * kv_dim);
  for (auto* buffer : {&router_logits, &rank_logits}) visitor(*buffer, T * n_expert);
  visitor(picks, T * n_used);
  visitor(pick_weights, T * n_used);
  visitor(moce_scores, n_expert);
  visitor(ranked, T * n_expert);
  visitor(gate_out, T * n_used * F);
  visitor(up_out, T * n_used * F);
  visitor(down_out, T * n_used * E);
  visitor(shared_gate_out, T * Fs);
  visitor(shared_up_out, T * Fs);
  visitor(shared_down_out, Fs > 0 ? T * E : 0);
  visitor(shared_scale, Fs > 0 ? T : 0);
}

void CpuScratch::allocate(const ModelShape& model, const ScratchShape& shape, int n_threads) {
  release();
  visit(model, shape, Allocator());
  attention.prepare(n_threads, LayerKvView::capacity_for(shape.n_ctx));
}

void CpuScratch::release() {
  visit(ModelShape(), ScratchShape(), Releaser());
  std::vector<float>().swap(row_product);
  for (ConvertedRows* set : {&gathered_gate, &gathered_up, &expert_activations, &rows})
    std::vector<uint8_t>().swap(set->bytes);
  for (ConvertedRows& set : converted) std::vector<uint8_t>().swap(set.bytes);
  attention.scores.clear();
}

uint64_t CpuScratch::bytes_for(const ModelShape& model, const ScratchShape& shape, int n_threads) {
  ByteCounter counter;
  CpuScratch().visit(model, shape, counter);
  // The logits rows the caller receives (a row per token when teacher-forced, else one).
  const uint64_t logits = uint64_t(shape.all_logits ? shape.max_tokens : 1) * uint64_t(model.n_vocab);
  return counter.bytes +
         (converted_values(model, shape) + logits + uint64_t(shape.next_visit_scores) +
          AttentionScratch::floats_for(shape.n_ctx, n_threads)) *
             sizeof(float);
}

}  // namespace strata
