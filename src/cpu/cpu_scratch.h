// The CPU backend's scratch: every buffer a forward batch uses, listed once (visit()), so that
// allocating it, releasing it and the memory plan's count of it cannot disagree.
//
// Buffers are allocated for a batch size at once and never grown by steps (a std::vector grown
// by resize() may take twice what it holds); activations converted for the weights' dot
// products are sized by the formats those weights are in. The memory plan's line is then what is
// allocated.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "backend/weight_formats.h"
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
  // Activations converted to the weights' vec_dot_type: a layer's inputs per format, the
  // experts' gathered inputs and down-projection inputs, and the general-purpose rows that
  // matmul() converts into.
  std::array<ConvertedRows, 32> converted;  // indexed by QuantType id
  ConvertedRows gathered_gate, gathered_up, expert_activations, rows;
  AttentionScratch attention;

  // Allocates every buffer for batches of `shape.max_tokens` (what was allocated before is
  // freed first).
  void allocate(const ModelShape& model, const WeightFormats& formats, const ScratchShape& shape,
                int n_threads);
  void release();
  static uint64_t bytes_for(const ModelShape& model, const WeightFormats& formats,
                            const ScratchShape& shape, int n_threads);

 private:
  template <class Visitor>
  void visit(const ModelShape& model, const WeightFormats& formats, const ScratchShape& shape,
             Visitor&& visitor);
};

}  // namespace strata
