// The public API the command-line tools and the server use: a Session is one model loaded for
// one conversation (its KV cache, its expert store, its threads).
//
// Thread-compatibility: a Session is used from one thread at a time.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct SessionOptions {
  std::string model_path;
  int n_threads = 0;  // 0: one per core
  int64_t n_ctx = 0;  // 0: min(trained context, 4096)
  int64_t prefill_chunk = 256;
};

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

// Timings of the work done since the session was opened (or since reset_stats()).
struct SessionStats {
  int64_t prefill_tokens = 0;
  double prefill_ms = 0;
  int64_t decode_tokens = 0;
  double decode_ms = 0;
  double prefill_tokens_per_s() const;
  double decode_tokens_per_s() const;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> open(const SessionOptions& options);
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
  int64_t n_past() const;  // tokens in the KV cache

  // Appends tokens to the context (prefill in chunks); logits() is then the last token's.
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
  // end-of-generation token (not passed to on_token). Returns the generated tokens.
  using TokenCallback = std::function<void(int32_t token, std::string_view text)>;
  Result<std::vector<int32_t>> generate(std::span<const int32_t> prompt,
                                        const GenerateOptions& options,
                                        const TokenCallback& on_token);

  // Called for every token fed, every layer: the routed experts, best first. `position` is
  // the token's position in the context. For tracing expert use (`strata trace`).
  using RouteCallback =
      std::function<void(int layer, int64_t position, std::span<const int32_t> experts)>;
  void set_route_callback(RouteCallback callback);
  int n_layers() const;
  int n_experts() const;
  int n_experts_per_token() const;

  const SessionStats& stats() const;
  void reset_stats();
  // One line: model, layers, experts, context, threads, SIMD level.
  std::string describe() const;
  // Weight bytes a decode step reads with every expert resident (the bandwidth bound's
  // numerator).
  uint64_t decode_weight_bytes_per_token() const;
  int n_threads() const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
