// An engine: one model loaded to compute with (DESIGN.md §1, "Engine and sessions"): the model
// file parsed once, the dense weights placed, the expert store and its arena, the backend and its
// threads. Sessions (session.h) are cheap: a KV cache, a context, statistics. Several sessions can
// use one engine; their forward passes take turns, one at a time, and share the arena (so a
// conversation's experts stay hot for the next turn, whoever asks).
//
// Thread-safety: an Engine may be used from several threads; each Session from one at a time.
#pragma once

#include <strata/expert_counters.h>
#include <strata/session_options.h>
#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// How a streaming engine reads experts from the model file: its largest single read and how
// many reads it keeps in flight (io_uring: the units it reads at once times the reads of a
// unit; pread: one per reader thread). `strata bench` probes the disk with this pattern too.
struct ExpertReadPattern {
  uint64_t read_bytes = 0;
  int in_flight = 0;
};

// A memory plan for a budget, as open() would make it (its first line is measured in the
// calling process).
struct MemoryPlanSummary {
  std::string text;  // line by line, the smallest budget that works last
  Status shortfall;  // why open() would refuse this budget (how much is missing); ok when it fits
};

class Session;

class Engine {
 public:
  // Loads the model as `options` say; the memory plan holds `options.sessions` KV caches.
  static Result<std::shared_ptr<Engine>> open(const SessionOptions& options);
  // The plan open() would make, without loading weights. REQUIRES: options.memory_budget > 0.
  static Result<MemoryPlanSummary> plan(const SessionOptions& options);
  ~Engine();

  // Tokenizer of the model.
  std::vector<int32_t> tokenize(std::string_view text, bool parse_special = true) const;
  std::string detokenize(std::span<const int32_t> tokens) const;
  // Tokens of a conversation in the model's chat format, ending with the assistant's turn.
  // Message contents are tokenized as plain text, so they cannot forge turn markers.
  Result<std::vector<int32_t>> chat_prompt(std::span<const ChatMessage> messages) const;
  bool is_end_of_generation(int32_t token) const;

  int64_t n_vocab() const;
  int64_t n_ctx() const;        // each session's context
  int64_t n_ctx_train() const;  // the context the model was trained on; 0 where the file says none
  int n_embd() const;
  int n_layers() const;
  int n_experts() const;
  int n_experts_per_token() const;
  int n_threads() const;

  // One line: model, layers, experts, context, threads, SIMD level, expert store.
  std::string describe() const;
  // The backend alone: "cpu: 2 threads, avx2 kernels", "cuda: NVIDIA H200 (device 0, ...)".
  std::string backend_description() const;
  // Bytes per second a copy moves (read plus written) in the memory the weights are computed
  // from, where that is a device's own (a GPU); nullopt for the host's memory.
  std::optional<double> measure_device_bandwidth() const;
  // Bytes per second a copy from page-locked host memory into that device's memory moves: the
  // bus an expert arena in device memory is fed over; nullopt for the host's memory.
  std::optional<double> measure_host_to_device_bandwidth() const;
  // The memory plan (empty without a budget).
  const std::string& memory_plan() const;
  // The expert store's counters since the engine was opened, all sessions together.
  ExpertCounters expert_counters() const;
  // Which experts are in memory the model computes from now, [layer * n_experts() + expert]: the
  // arena's residents when experts stream, every expert otherwise. Waits for a running forward
  // pass to end (residency changes only at its deterministic points).
  std::vector<uint8_t> expert_residency() const;
  // Writes the expert usage counts of every session so far, added to what SessionOptions::
  // warm_path held, to that file.
  Status save_expert_usage() const;
  // Weight bytes a decode step reads with every expert resident (the bandwidth bound's
  // numerator).
  uint64_t decode_weight_bytes_per_token() const;
  // KV-cache bytes attention reads per position of context in a decode step (keys and values
  // of every layer).
  uint64_t kv_cache_bytes_per_position() const;
  // How experts are read; nullopt when every expert is resident.
  const std::optional<ExpertReadPattern>& expert_read_pattern() const;
  // Peak resident memory of the process so far (VmHWM).
  static uint64_t peak_rss_bytes();
  // The most device memory the backend's allocations have held at once (weights, KV cache,
  // scratch, expert arena; not the CUDA context's own), where it computes from a device's own
  // memory; nullopt on the CPU.
  std::optional<uint64_t> peak_device_bytes() const;

  // The engine's state, opaque here (runtime/engine_impl.h defines it).
  struct Impl;

 private:
  friend class Session;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
