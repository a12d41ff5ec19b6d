// A session: one conversation on an engine (engine.h): its KV cache, the tokens in it, the last
// logits, and what it did. Sessions are cheap; several may share one engine, their forward passes
// taking turns.
//
// Thread-compatibility: a Session is used from one thread at a time.
#pragma once

#include <strata/engine.h>
#include <strata/expert_counters.h>
#include <strata/session_options.h>
#include <strata/status.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

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

// What a session did since it was opened (or since reset_stats()).
struct SessionStats {
  int64_t prefill_tokens = 0;
  double prefill_ms = 0;
  int64_t decode_tokens = 0;
  double decode_ms = 0;
  // Of decode_ms, the time the compute thread waited for a device's queued work (0 on the CPU).
  double decode_device_wait_ms = 0;
  ExpertCounters experts;
  struct Step {  // one forward batch: a prompt chunk or a decoded token
    bool prefill;
    int64_t tokens;
    double ms;
    ExpertCounters experts;  // during this step
    double device_wait_ms;   // of ms, waiting for a device's queued work
  };
  std::vector<Step> steps;
  double prefill_tokens_per_s() const;
  double decode_tokens_per_s() const;
  // The expert counters summed over the decode steps only (a prompt's prefill streams very
  // differently from decoding, so hit rates are reported for decoding).
  ExpertCounters decode_experts() const;
};

class Session {
 public:
  // A conversation on `engine`. An error when the engine's memory plan holds no more sessions
  // (SessionOptions::sessions) or its KV cache cannot be made.
  static Result<std::unique_ptr<Session>> open(std::shared_ptr<Engine> engine);
  // A session on an engine of its own: what a command with one conversation needs.
  static Result<std::unique_ptr<Session>> open(const SessionOptions& options);

  ~Session();

  Engine& engine() const;
  int64_t n_ctx() const;
  int64_t n_past() const;  // tokens in the KV cache
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
  // Keeps the first `n_tokens` of the context (all of it when it holds fewer); logits() is
  // empty until the next feed.
  void truncate(int64_t n_tokens);

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

  // A generation a token at a time, for callers that decode several sessions together (a
  // server); generate() is these steps for one session. begin_generation() cuts the context back
  // to the longest prefix it shares with `prompt` (at least one prompt token is fed) and feeds
  // the rest; it returns how many prompt tokens were reused from the cache.
  Result<int64_t> begin_generation(std::span<const int32_t> prompt, const GenerateOptions& options);
  // The next token, sampled from logits() with the generation's sampler, and the text it
  // completes (complete UTF-8 only; the rest waits for the next token or finish_text()).
  struct Sampled {
    int32_t token = -1;
    bool end_of_generation = false;  // the model's end token (its text is not passed on)
    std::string text;
  };
  Sampled sample_next();
  // What the generation's text still holds back (an incomplete UTF-8 sequence at its end).
  std::string finish_text();
  // How many leading tokens of `prompt` are in the context (what begin_generation would reuse).
  int64_t shared_prefix(std::span<const int32_t> prompt) const;
  // Feeds tokens[i] to sessions[i], one forward pass for all: each sequence's attention reads its
  // own cache, each routed expert is computed once for all the rows routed to it. The logits of
  // a session fed together with others can differ in the last bits from feeding it alone (the
  // kernels' row blocking changes with the batch), and are a function of the batch. REQUIRES:
  // distinct sessions of one engine; route, prediction and router-input callbacks are not
  // called for these steps.
  static Status feed_together(std::span<Session* const> sessions, std::span<const int32_t> tokens);

  // Called for every token this session feeds, every layer: the routed experts, best first.
  // `position` is the token's position in the context. For tracing expert use (`strata trace`).
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

  // What this session did since it was opened or reset_stats().
  const SessionStats& stats() const;
  void reset_stats();

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata
