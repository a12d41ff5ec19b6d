// The public API the command-line tools and the server use: a Session is one model loaded for
// one conversation (its KV cache, its expert store, its threads).
//
// Thread-compatibility: a Session is used from one thread at a time.
#pragma once

#include <strata/expert_counters.h>
#include <strata/status.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct SessionOptions {
  std::string model_path;
  // Where the model computes: "cpu", "cuda" (device `gpu`), or "auto": CUDA where this build
  // has it and a device answers, else the CPU.
  std::string device = "auto";
  int gpu = 0;
  int n_threads = 0;  // 0: one per core
  int64_t n_ctx = 0;  // 0: min(trained context, 4096)
  int64_t prefill_chunk = 256;

  // Memory budget of the whole process in bytes (`--mem`). 0: no budget; the file is
  // memory-mapped and every expert stays resident. Otherwise dense weights are read into
  // memory, experts stream from the file into an arena of what the budget leaves.
  uint64_t memory_budget = 0;
  std::string memory_budget_basis;  // how `--mem auto` chose it, printed with the plan
  // Streaming with an arena sized to hold this share (0..1] of all expert units, whatever the
  // rest of the process takes: for experiments and benchmarks that compare arena sizes.
  // Ignored when memory_budget is set.
  double arena_share = 0;
  bool teacher_forced = false;  // the plan keeps room for the logits of every batch row
  // Expert arena replacement policy. Empty: "predicted" with a next-expert predictor, else
  // "successor" (best measured: experts/next_use_policy.h).
  std::string cache_policy;
  // A next-expert predictor (`strata fit-predictor`): after each layer it estimates which of the
  // layer's experts the next token uses, for the "predicted" policy
  // (model/next_expert_predictor.h).
  std::string next_expert_predictor_path;
  int io_threads = 2;
  // "auto": io_uring where the kernel allows it, else pread; or "pread", "uring".
  std::string io_backend = "auto";
  // Expert reads io_uring keeps running at once; 0: one for expert units of 1 MiB or more,
  // else 2 * io_threads.
  int io_depth = 0;
  int readahead = -1;  // experts per layer predicted for the next layer; -1: the top-k
  // How many layers ahead the read-ahead predicts; 0: two for expert units under 1 MiB, else one.
  int readahead_layers = 0;
  // Of each layer beyond the next, only the top `readahead_far` predictions are read: the
  // farther guess is less certain, and on small expert units the disk is bound by reads per
  // second. -1: two (or --readahead, if fewer).
  int readahead_far = -1;
  // Bytes of read-ahead reads one forward step (a token, in decode) may start, spread evenly
  // over the layers; predictions past a layer's share start no read. 0: no byte limit.
  uint64_t readahead_budget = 0;
  // Cache-aware routing: +moce_bonus on the router logits of resident experts, the top
  // moce_protect picks always exact. 0: exact routing.
  float moce_bonus = 0.0f;
  int moce_protect = 3;
  // Expert usage counts: the hottest experts are preloaded from this file at start (when it
  // exists) and save_expert_usage() writes the session's counts to it.
  std::string warm_path;
  // No memory plan or progress bar on stderr (the note on a layout that would stream faster is
  // said all the same, once per process).
  bool quiet = false;
};

// Whether a session with these options streams its experts into an arena (a memory budget or
// an arena share) instead of keeping every expert resident.
bool streams_experts(const SessionOptions& options);

// A memory budget and, for "auto", how it was chosen ("--mem auto: 80 % of 2.00 GiB left below
// the memory cgroup's limit").
struct MemoryBudget {
  uint64_t bytes = 0;
  std::string basis;
};
// "512M", "4G", "4GiB", "1.5G" (binary units), or "auto": 80 % of the memory this process can
// still take (the machine's available memory, or less below a cgroup limit).
Result<MemoryBudget> parse_memory_budget(std::string_view text);
// "8M", "64M", ... for --readahead-budget; "0" for no limit.
Result<uint64_t> parse_readahead_budget(std::string_view text);

struct GenerateOptions {
  int max_tokens = 128;
  float temperature = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  int repeat_last_n = 64;
  uint64_t seed = 0;
  bool stop_at_end_of_generation = true;
};

// What the session did since it was opened (or since reset_stats()).
struct SessionStats {
  int64_t prefill_tokens = 0;
  double prefill_ms = 0;
  int64_t decode_tokens = 0;
  double decode_ms = 0;
  ExpertCounters experts;
  struct Step {  // one forward batch: a prompt chunk or a decoded token
    bool prefill;
    int64_t tokens;
    double ms;
    ExpertCounters experts;  // during this step
  };
  std::vector<Step> steps;
  double prefill_tokens_per_s() const;
  double decode_tokens_per_s() const;
  // The expert counters summed over the decode steps only (a prompt's prefill streams very
  // differently from decoding, so hit rates are reported for decoding).
  ExpertCounters decode_experts() const;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// How a streaming session reads experts from the model file: its largest single read and how
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

class Session {
 public:
  static Result<std::unique_ptr<Session>> open(const SessionOptions& options);
  // REQUIRES: options.memory_budget > 0.
  static Result<MemoryPlanSummary> plan(const SessionOptions& options);

  ~Session();

  // Tokenizer of the model.
  std::vector<int32_t> tokenize(std::string_view text, bool parse_special = true) const;
  std::string detokenize(std::span<const int32_t> tokens) const;
  // Tokens of a conversation in the model's chat format, ending with the assistant's turn.
  // Message contents are tokenized as plain text, so they cannot forge turn markers.
  Result<std::vector<int32_t>> chat_prompt(std::span<const ChatMessage> messages) const;
  bool is_end_of_generation(int32_t token) const;
  int64_t n_vocab() const;
  int64_t n_ctx() const;
  int64_t n_ctx_train() const;  // the context the model was trained on; 0 where the file says none
  int64_t n_past() const;       // tokens in the KV cache
  // OK when `n_tokens` fit in the context; else the reason, naming `what`: "the prompt has 5,000
  // tokens but the context holds 4,096 (--ctx; the model was trained on 40,960)". A context
  // already as long as the trained one is not offered to grow.
  Status check_fits_context(int64_t n_tokens, std::string_view what) const;

  // Appends tokens to the context (prefill in chunks); logits() is then the last token's.
  // After a Ctrl-C or SIGTERM, a prefill stops before its next chunk with the error
  // "interrupted" (the chunks before it stay in the context); one token is always fed.
  Status feed(std::span<const int32_t> tokens);
  // Appends tokens and returns the logits after every one of them, [n][n_vocab].
  Status feed_teacher_forced(std::span<const int32_t> tokens, std::vector<float>& logits);
  std::span<const float> logits() const;
  // Empties the context.
  void reset();

  // Generates a continuation of `prompt`: the context is first cut back to the longest prefix
  // it shares with `prompt` (so a conversation re-sent with one more turn only computes the
  // new turn), the rest is fed, then up to max_tokens tokens are sampled; on_token receives
  // each token and its text as soon as the text is complete UTF-8. Stops after an
  // end-of-generation token (not passed to on_token), when the context is full (n_past()
  // == n_ctx(); a prompt longer than the context is an error), or when on_token returns false
  // (the token it was given is kept, not fed). Returns the generated tokens. The prompt is fed
  // as feed() feeds it, so an interruption during its prefill is the error "interrupted".
  using TokenCallback = std::function<bool(int32_t token, std::string_view text)>;
  Result<std::vector<int32_t>> generate(std::span<const int32_t> prompt,
                                        const GenerateOptions& options,
                                        const TokenCallback& on_token);

  // Called for every token fed, every layer: the routed experts, best first. `position` is
  // the token's position in the context. For tracing expert use (`strata trace`).
  using RouteCallback =
      std::function<void(int layer, int64_t position, std::span<const int32_t> experts)>;
  void set_route_callback(RouteCallback callback);
  // Called for every token fed and every layer l >= 1: the experts the read-ahead predictor
  // ranks top for layer l, best first (n_experts_per_token of them, computed during layer
  // l - 1 whether or not read-ahead is on). For `strata trace`.
  using PredictionCallback = RouteCallback;
  void set_prediction_callback(PredictionCallback callback);
  // Called for every layer of every forward batch with what the router reads, [n_tokens][n_embd]
  // (the normed hidden state) for the tokens at positions [position, position + n_tokens).
  // For `strata fit-predictor`.
  using RouterInputCallback =
      std::function<void(int layer, int64_t position, int64_t n_tokens, std::span<const float>)>;
  void set_router_input_callback(RouterInputCallback callback);
  int n_embd() const;
  int n_layers() const;
  int n_experts() const;
  int n_experts_per_token() const;

  const SessionStats& stats() const;
  void reset_stats();
  // One line: model, layers, experts, context, threads, SIMD level, expert store.
  std::string describe() const;
  // The memory plan (empty without a budget).
  const std::string& memory_plan() const;
  // Peak resident memory of the process so far (VmHWM).
  static uint64_t peak_rss_bytes();
  // Writes the expert usage counts to SessionOptions::warm_path.
  Status save_expert_usage() const;
  // Weight bytes a decode step reads with every expert resident (the bandwidth bound's
  // numerator).
  uint64_t decode_weight_bytes_per_token() const;
  // KV-cache bytes attention reads per position of context in a decode step (keys and values
  // of every layer).
  uint64_t kv_cache_bytes_per_position() const;
  // How experts are read; nullopt when every expert is resident.
  const std::optional<ExpertReadPattern>& expert_read_pattern() const;
  int n_threads() const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
