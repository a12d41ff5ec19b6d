// Expert traces: which experts the router chose, for every token and layer of a run, and
// optionally what the read-ahead predictor expected. Recorded by `strata trace`, replayed by
// `strata cachesim` to compare replacement policies and read-ahead offline.
//
// File layout, all integers little-endian:
//
//   offset  size  field
//   0       8     magic: the ASCII bytes "STRTRACE"
//   8       4     version: 2 (version 1 is read too: the same layout, flag bit 1 never set)
//   12      4     flags: bit 0 set = teacher-forced (all tokens came from a text, none was
//                 generated); bit 1 set = predictions follow the experts; the other bits are 0
//   16      4     n_layer: MoE layers per token, 1..4096
//   20      4     n_expert: routed experts per layer, 1..65536
//   24      4     n_expert_used (k): experts chosen per token and layer, 1..n_expert
//   28      4     note_bytes: length of the note, 0..65536
//   32      8     n_tokens: tokens traced (the tokens fed to the model, in order)
//   40      8     n_prompt_tokens: how many of them were the prompt (prefill), <= n_tokens;
//                 the rest were generated and fed back one at a time (decode)
//   48      note_bytes                    note: UTF-8 text, how the trace was made (model, input)
//   ...     n_tokens * n_layer * k * 2    experts: uint16 [n_tokens][n_layer][k], the router's
//                                         picks best first, distinct within a token and layer,
//                                         each < n_expert
//   ...     n_tokens * (n_layer - 1) * k * 2
//                                         predictions, only with flag bit 1: uint16
//                                         [n_tokens][n_layer - 1][k], for layers 1..n_layer-1
//                                         the top k of the read-ahead predictor (router_l
//                                         applied to norm_l of the hidden state after layer
//                                         l-1's attention) best first, distinct, each < n_expert
//
// The file ends right after the last array.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct ExpertTrace {
  uint32_t n_layer = 0;
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint64_t n_prompt_tokens = 0;
  bool teacher_forced = false;
  std::string note;
  std::vector<uint16_t> experts;  // [n_tokens][n_layer][n_expert_used]
  bool has_predictions = false;
  std::vector<uint16_t> predictions;  // [n_tokens][n_layer - 1][n_expert_used], or empty

  uint64_t n_tokens() const {
    return n_layer && n_expert_used ? experts.size() / (uint64_t(n_layer) * n_expert_used) : 0;
  }
  uint64_t n_units() const { return uint64_t(n_layer) * n_expert; }
  // REQUIRES: token < n_tokens(), layer < n_layer
  std::span<const uint16_t> picks(uint64_t token, uint32_t layer) const {
    return {experts.data() + (token * n_layer + layer) * n_expert_used, n_expert_used};
  }
  // What the predictor expected `layer` to pick for `token`.
  // REQUIRES: has_predictions, token < n_tokens(), 1 <= layer < n_layer
  std::span<const uint16_t> predicted(uint64_t token, uint32_t layer) const {
    return {predictions.data() + (token * (n_layer - 1) + layer - 1) * n_expert_used,
            n_expert_used};
  }
};

// Checks every constraint of the layout above; `name` prefixes the error.
Status validate_expert_trace(const ExpertTrace& trace, std::string_view name);

// REQUIRES: validate_expert_trace(trace) is ok.
std::vector<uint8_t> encode_expert_trace(const ExpertTrace& trace);
// Any bytes: a valid trace, or an error line naming `name` and the first problem found.
Result<ExpertTrace> decode_expert_trace(std::span<const uint8_t> bytes, std::string_view name);
Result<ExpertTrace> read_expert_trace(const std::string& path);

// Collects the routing of a run as the model reports it (any order of tokens and layers, for
// example layer by layer within a prefill chunk) and checks that every token and layer was
// seen exactly once; likewise the predictions, if any was reported.
class ExpertTraceRecorder {
 public:
  ExpertTraceRecorder(uint32_t n_layer, uint32_t n_expert, uint32_t n_expert_used);

  // Keeps the first error (a repeated or malformed report) for finish().
  void record(int layer, int64_t position, std::span<const int32_t> experts);
  // The predictor's top experts for `layer` (1..n_layer-1).
  void record_prediction(int layer, int64_t position, std::span<const int32_t> experts);
  // The trace of positions [0, n_tokens); an error if any was missed or a report was bad.
  Result<ExpertTrace> finish(uint64_t n_prompt_tokens, bool teacher_forced, std::string note);

 private:
  // Stores one report into `ids` ([position][layers_per_token][k]), growing it and `seen`.
  void store(const char* what, int layer, int first_layer, int64_t position,
             std::span<const int32_t> experts, std::vector<uint16_t>& ids,
             std::vector<uint8_t>& seen);

  ExpertTrace trace_;
  std::vector<uint8_t> seen_;             // [n_tokens][n_layer]
  std::vector<uint8_t> seen_prediction_;  // [n_tokens][n_layer - 1]
  Status error_;
};

}  // namespace strata
