// The CUDA backend's device scratch: every buffer a forward batch uses, listed once (visit()), so
// that allocating it and the memory plan's count of it cannot disagree. Sized for a batch of
// tokens at once, like the CPU's (cpu/cpu_scratch.h); the logits rows and the predictor's
// product, whose sizes the batch does not fix, are counted as the plan asks and allocated when
// first needed.
#pragma once

#include <strata/status.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "cuda/activation_chunks.h"
#include "cuda/cuda_memory.h"

namespace strata::cuda {

// Rows converted to one activation format (activation_chunks.h), for up to `rows` x `width`
// values of any of them.
struct ConvertedRows {
  DeviceBuffer values, d, s, bsums;
  int64_t capacity = 0;  // values it holds at most
  // What it holds now: the conversion of `source` (rows x n_in) to `format`.
  const float* source = nullptr;
  Format format = Format::kF32;
  int64_t n_rows = 0, n_in = 0;
  uint64_t last_use = 0;

  // A view of rows x n_in values in `format`. REQUIRES: rows * n_in <= capacity.
  ActivationRows view(Format format, int64_t rows, int64_t n_in) const;
};

struct CudaScratch {
  // The batch's activations (BatchActivations points into these), [tokens][n_embd] each.
  DeviceBuffer hidden, normed, lookahead, moe_out;
  // Attention: its input norm [tokens][n_embd], q and output [tokens][q_dim], k and v
  // [tokens][kv_dim].
  DeviceBuffer attention_input, q, k, v, attention_out;
  // Routing: logits [tokens][n_expert]; picks then weights [tokens][k] (copied to the host as
  // one); read-ahead logits and rankings [tokens][n_expert].
  DeviceBuffer router_logits, route_out, rank_logits, ranked;
  // Routed experts: gate outputs and SwiGLU activations [tokens * k][n_ff], down outputs
  // [tokens * k][n_embd].
  DeviceBuffer gate_out, expert_h, down_out;
  // The shared expert: gate and activations [tokens][n_ff_shared], down [tokens][n_embd], the
  // gate's logit [tokens].
  DeviceBuffer shared_gate, shared_h, shared_down, shared_scale;
  // Inputs from the host: token ids [tokens], the gathered rows' tokens [tokens * k], the mix's
  // rows then weights [tokens * k], the residency routing sees [n_expert].
  DeviceBuffer token_ids, token_of_row, mix_inputs, resident;
  // Routing in place (Backend::routes_in_place), for up to kMaxTokensRoutedInPlace tokens:
  // each pick's token and its own row, [tokens * k] each, written at allocation; each expert's
  // device pointers per layer, [n_layer][gate, up, down][n_expert], written at a layer's first
  // use (expert_tables_written).
  DeviceBuffer pick_tokens, pick_rows, expert_tables;
  // Their picks then weights, [n_layer][2][tokens * k], copied to routes_in_place at once.
  DeviceBuffer device_routes;
  std::vector<uint8_t> expert_tables_written;  // [n_layer]
  // Conversions: general-purpose sets (the FFN input, attention input and output, the shared
  // expert's activations, the final norm), the experts' gathered inputs, their down inputs.
  static constexpr int kGeneralSets = 3;
  std::array<ConvertedRows, kGeneralSets> general;
  ConvertedRows gathered_gate, gathered_up, expert_input;
  // Route results on the host: picks then weights [tokens][k]; those of the layers routed in
  // place, [n_layer][picks, weights][tokens routed in place][k].
  PinnedBuffer route_readback, routes_in_place;
  // What a step reads from the host, copied from page-locked memory so that a recorded step
  // (a CUDA graph) reads the values of each replay: the token ids [tokens], and the positions
  // attention reads, a ring of kPositionSlots taken a distinct position at a time and one slot
  // after it for the recorded layers (position_staging, copied to positions). A single row of
  // logits comes back to logits_readback [n_vocab].
  static constexpr int64_t kPositionSlots = 1024;
  DeviceBuffer positions;
  PinnedBuffer token_staging, position_staging, logits_readback;
  // Sized on first use: logits rows [rows][n_vocab], the predictor's scores.
  DeviceBuffer logits, row_product;

  Status allocate(const ModelShape& model, int64_t tokens);
  void release();
  static uint64_t bytes_for(const ModelShape& model, const ScratchShape& shape);
  static int64_t tokens_routed_in_place(int64_t tokens) {
    return std::min(tokens, Backend::kMaxTokensRoutedInPlace);
  }

 private:
  template <class Visitor>
  void visit(const ModelShape& model, int64_t tokens, Visitor&& visitor);
};

}  // namespace strata::cuda
