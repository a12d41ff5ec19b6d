// The CPU backend's scratch: every buffer a forward batch uses, listed once (visit()), so that
// allocating it, releasing it and the memory plan's count of it cannot disagree.
//
// Buffers are allocated for a batch size at once, never grown by steps (a std::vector grown by
// resize() may take twice what it holds), so the memory plan's line is what is allocated, except
// that converted activation rows are counted at 4 bytes a value (F32, the widest activation
// format) whatever format the weights take.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "cpu/attention.h"
#include "cpu/matmul.h"

namespace strata {

struct CpuScratch {
  // The batch's activations (BatchActivations points into these), [tokens][n_embd] each.
  std::vector<float> hidden, normed, lookahead, moe_out;
  // Attention: its input norm, q and output [tokens][q_dim], k and v [tokens][kv_dim], and the
  // projected output [tokens][n_embd].
  std::vector<float> attention_input, q, k, v, attention_out, projected;
  // Routing: logits [tokens][n_expert], picks and weights [tokens][k], MoCE scores [n_expert];
  // read-ahead rankings: logits [tokens][n_expert], top experts [tokens][n_expert] at most.
  std::vector<float> router_logits, pick_weights, moce_scores, rank_logits;
  std::vector<int32_t> picks, ranked;
  std::vector<float> row_product;  // [next_visit_scores], sized by its first product
  // Routed experts: [tokens * k][n_ff] gate and up outputs, [tokens * k][n_embd] down outputs.
  std::vector<float> gate_out, up_out, down_out;
  // The shared expert: [tokens][n_ff_shared] gate and up, [tokens][n_embd] down, [tokens] scale.
  std::vector<float> shared_gate_out, shared_up_out, shared_down_out, shared_scale;
  // Activations converted to the weights' vec_dot_type: the FFN input per format (at most
  // kConvertedFormats at once), the experts' gathered inputs and down-projection inputs, and
  // one general-purpose set.
  static constexpr int kConvertedFormats = 3;
  std::array<ConvertedRows, 32> converted;  // indexed by QuantType id
  ConvertedRows gathered_gate, gathered_up, expert_activations, rows;
  AttentionScratch attention;

  // Allocates every buffer for batches of `tokens` (what was allocated before is freed first).
  void allocate(const ModelShape& model, const ScratchShape& shape, int n_threads);
  void release();
  static uint64_t bytes_for(const ModelShape& model, const ScratchShape& shape, int n_threads);

 private:
  template <class Visitor>
  void visit(const ModelShape& model, const ScratchShape& shape, Visitor&& visitor);
};

}  // namespace strata
