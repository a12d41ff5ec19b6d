// `strata make-model`: synthetic MoE models with random weights for tests and benchmarks,
// shaped like real ones (presets such as Qwen3-30B-A3B), and a measurement of how their
// routing behaves.
//
// Random weights alone route degenerately: the residual stream accumulates a common component
// and deep layers send every token to the same experts. The generator builds in the structure
// real models show instead (synthetic_weights.cpp explains how): expert load spread across
// experts in every layer, and a context that drifts with the last few tokens, so that a token
// re-uses part of its predecessor's experts.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

struct SyntheticModelOptions {
  std::string arch = "qwen3moe";  // qwen3moe or qwen2moe
  std::string preset = "tiny";    // see synthetic_presets(): tiny, small, 30b-a3b, ...
  std::string type = "q4_0";      // format of the 2-D weights; routers and norms stay F32
  std::string expert_type;        // format of the routed experts; empty: `type`
  uint64_t seed = 1;
  std::string output_path;  // a regular file: the model is read back before it is renamed there
  // Tokenizer to copy (any GGUF with tokenizer.ggml.* keys); empty: a byte-level vocabulary.
  std::string vocab_path;
  int n_threads = 0;  // 0: one per core
};

// "name: layers, hidden, heads, experts" lines, one per preset and architecture.
std::vector<std::string> synthetic_presets();

// Writes the model tensor by tensor (never the whole file in memory), with a progress bar.
Status make_synthetic_model(const SyntheticModelOptions& options);

struct LayerRoutingStats {
  double repeat_fraction = 0;     // share of a token's experts its predecessor also used
  double max_over_mean_load = 0;  // busiest expert's load / mean load
  int unused_experts = 0;
  double previous_layer_overlap = 0;  // share of the experts with the same ids one layer up
};

struct RoutingReport {
  int64_t n_tokens = 0;
  std::vector<LayerRoutingStats> layers;
  std::string to_text() const;  // a table and a summary line
};

// Runs `n_tokens` seeded random tokens through the model (all experts resident) and
// summarises the routes.
Result<RoutingReport> measure_routing(const std::string& model_path, int64_t n_tokens,
                                      uint64_t seed, int n_threads);

}  // namespace strata
