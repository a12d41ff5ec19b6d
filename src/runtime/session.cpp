#include <strata/session.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "base/check.h"
#include "base/interrupt.h"
#include "runtime/engine_impl.h"
#include "runtime/sampler.h"
#include "runtime/unicode_bytes.h"

namespace strata {

double SessionStats::prefill_tokens_per_s() const {
  return prefill_ms > 0 ? double(prefill_tokens) / (prefill_ms / 1000.0) : 0.0;
}
double SessionStats::decode_tokens_per_s() const {
  return decode_ms > 0 ? double(decode_tokens) / (decode_ms / 1000.0) : 0.0;
}

ExpertCounters SessionStats::decode_experts() const {
  ExpertCounters sum;
  for (const Step& step : steps)
    if (!step.prefill) sum += step.experts;
  return sum;
}

namespace {

// 40960 -> "40,960": token counts as people read them.
std::string digit_groups(int64_t count) {
  const std::string digits = std::to_string(count);
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && digits[i - 1] != '-' && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return grouped;
}

}  // namespace

struct Session::Impl {
  std::shared_ptr<Engine> engine;
  std::unique_ptr<KvCache> cache;
  std::vector<int32_t> context;  // the tokens whose keys and values are in the cache
  std::vector<float> logits;     // after the last token fed
  SessionStats stats;
  RouteCallback route_callback;
  PredictionCallback prediction_callback;
  RouterInputCallback router_input_callback;
  // The generation begin_generation() started.
  std::optional<Sampler> sampler;
  bool stop_at_end_of_generation = true;
  runtime::Utf8Stream text;

  ~Impl() {
    std::lock_guard lock(engine->impl_->sessions);
    --engine->impl_->open_sessions;
  }
  Engine::Impl& shared() const { return *engine->impl_; }
  Status feed(std::span<const int32_t> tokens, std::vector<float>* all_logits);
  // One forward pass of `part` at the context's end, with this session's observers.
  Status forward(std::span<const int32_t> part, bool all_logits);
  // The clock and counters a step is measured from.
  struct StepStart {
    std::chrono::steady_clock::time_point time;
    ExpertCounters experts;
    double device_wait_ms;
  };
  StepStart step_start() const {
    const Engine::Impl& e = shared();
    return {std::chrono::steady_clock::now(), e.loaded.experts->stats(),
            e.backend->device_wait_ms()};
  }
  // What a step of `tokens` did since `start`.
  void record(bool prefill, int64_t tokens, const StepStart& start);
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::open(std::shared_ptr<Engine> engine) {
  Engine::Impl& shared = *engine->impl_;
  {
    std::lock_guard lock(shared.sessions);
    if (shared.open_sessions >= shared.options.sessions)
      return Status::errorf("{}: the engine's memory plan holds {} session{}, all open",
                            shared.options.model_path, shared.options.sessions,
                            shared.options.sessions == 1 ? "" : "s");
    ++shared.open_sessions;
  }
  auto impl = std::make_unique<Impl>();
  impl->engine = std::move(engine);  // from here on, ~Impl gives the session back
  STRATA_ASSIGN_OR_RETURN(impl->cache, shared.backend->make_kv_cache(shared.options.n_ctx));
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Result<std::unique_ptr<Session>> Session::open(const SessionOptions& options) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Engine> engine, Engine::open(options));
  return open(std::move(engine));
}

Engine& Session::engine() const { return *impl_->engine; }
int64_t Session::n_ctx() const { return impl_->cache->n_ctx(); }
int64_t Session::n_past() const { return int64_t(impl_->context.size()); }

Status Session::check_fits_context(int64_t n_tokens, std::string_view what) const {
  if (n_tokens <= n_ctx()) return Status();
  const int64_t trained = engine().n_ctx_train();
  const std::string reason =
      trained <= 0 ? "(--ctx)"
      : n_ctx() < trained
          ? fmt::format("(--ctx; the model was trained on {})", digit_groups(trained))
          : fmt::format("(the model was trained on {})", digit_groups(trained));
  return Status::errorf("{} has {} tokens but the context holds {} {}", what,
                        digit_groups(n_tokens), digit_groups(n_ctx()), reason);
}

std::span<const float> Session::logits() const { return impl_->logits; }
const SessionStats& Session::stats() const { return impl_->stats; }
void Session::reset_stats() { impl_->stats = SessionStats(); }
void Session::reset() { truncate(0); }
void Session::truncate(int64_t n_tokens) {
  impl_->context.resize(std::min(impl_->context.size(), size_t(std::max<int64_t>(0, n_tokens))));
  impl_->logits.clear();
}

Status Session::Impl::forward(std::span<const int32_t> part, bool all_logits) {
  Engine::Impl& e = shared();
  Transformer& transformer = *e.transformer;
  e.running = {.route = &route_callback,
               .batch_start = int64_t(context.size()),
               .decoding = part.size() == 1};
  const int64_t batch_start = e.running.batch_start;
  if (prediction_callback)
    transformer.set_prediction_observer(
        [&](int layer, int64_t index, std::span<const int32_t> experts) {
          prediction_callback(layer, batch_start + index, experts);
        },
        int(e.model().config().n_expert_used));
  if (router_input_callback)
    transformer.set_router_input_observer(
        [&](int layer, int64_t n_tokens, std::span<const float> inputs) {
          router_input_callback(layer, batch_start, n_tokens, inputs);
        });
  const Status status =
      transformer.forward(part, int64_t(context.size()), *cache, all_logits, logits);
  transformer.set_prediction_observer(nullptr, 0);
  transformer.set_router_input_observer(nullptr);
  e.running = {};
  return status;
}

Status Session::Impl::feed(std::span<const int32_t> tokens, std::vector<float>* all_logits) {
  if (tokens.empty()) return Status();
  if (int64_t(context.size() + tokens.size()) > cache->n_ctx())
    return Status::errorf("the context holds {} tokens; {} more exceed its size {} (use --ctx)",
                          context.size(), tokens.size(), cache->n_ctx());
  Engine::Impl& e = shared();
  std::lock_guard lock(e.forward);
  const StepStart start = step_start();
  const size_t chunk = size_t(std::max<int64_t>(1, e.options.prefill_chunk));
  const size_t n_vocab = size_t(e.model().config().n_vocab);
  if (all_logits) {
    // Exactly the rows that come back (the memory plan counts them): appending chunk by chunk
    // would let the vector double past them.
    all_logits->clear();
    all_logits->reserve(tokens.size() * n_vocab);
  }
  size_t fed = 0;
  Status stopped;
  while (fed < tokens.size()) {
    // Before each chunk of a prefill; a decode step, one token, always completes, so that a
    // caller polling between tokens never loses one it was told about.
    if (tokens.size() > 1 && interrupted()) {
      stopped = interrupted_error();
      break;
    }
    const auto part = tokens.subspan(fed, std::min(chunk, tokens.size() - fed));
    STRATA_RETURN_IF_ERROR(forward(part, all_logits != nullptr));
    context.insert(context.end(), part.begin(), part.end());
    if (all_logits) all_logits->insert(all_logits->end(), logits.begin(), logits.end());
    fed += part.size();
  }
  if (all_logits && fed > 0)
    logits.assign(all_logits->end() - ptrdiff_t(n_vocab), all_logits->end());
  const bool prefill = tokens.size() > 1;
  if (prefill) e.transformer->release_scratch();  // the prompt's batch-sized buffers
  record(prefill, int64_t(fed), start);
  return stopped;
}

void Session::Impl::record(bool prefill, int64_t tokens, const StepStart& start) {
  const StepStart end = step_start();
  const double ms = std::chrono::duration<double, std::milli>(end.time - start.time).count();
  ExpertCounters during = end.experts;
  during -= start.experts;
  const double device_wait_ms = end.device_wait_ms - start.device_wait_ms;
  if (prefill) {
    stats.prefill_tokens += tokens;
    stats.prefill_ms += ms;
  } else {
    stats.decode_tokens += tokens;
    stats.decode_ms += ms;
    stats.decode_device_wait_ms += device_wait_ms;
  }
  stats.experts += during;
  stats.steps.push_back({prefill, tokens, ms, during, device_wait_ms});
}

Status Session::feed(std::span<const int32_t> tokens) { return impl_->feed(tokens, nullptr); }

Status Session::feed_teacher_forced(std::span<const int32_t> tokens, std::vector<float>& logits) {
  return impl_->feed(tokens, &logits);
}

int64_t Session::shared_prefix(std::span<const int32_t> prompt) const {
  const std::vector<int32_t>& context = impl_->context;
  const auto [in_context, in_prompt] =
      std::mismatch(context.begin(), context.end(), prompt.begin(), prompt.end());
  return int64_t(in_context - context.begin());
}

Result<int64_t> Session::begin_generation(std::span<const int32_t> prompt,
                                          const GenerateOptions& options) {
  if (prompt.empty()) return Status::error("generate: empty prompt");
  // At least one prompt token is fed, for fresh logits.
  const int64_t shared = std::min(shared_prefix(prompt), int64_t(prompt.size()) - 1);
  impl_->context.resize(size_t(shared));
  impl_->sampler.reset();
  STRATA_RETURN_IF_ERROR(impl_->feed(prompt.subspan(size_t(shared)), nullptr));
  impl_->sampler.emplace(SamplerOptions{.temperature = options.temperature,
                                        .top_k = options.top_k,
                                        .top_p = options.top_p,
                                        .min_p = options.min_p,
                                        .repeat_penalty = options.repeat_penalty,
                                        .repeat_last_n = options.repeat_last_n,
                                        .seed = options.seed});
  impl_->stop_at_end_of_generation = options.stop_at_end_of_generation;
  impl_->text = runtime::Utf8Stream();
  return shared;
}

Session::Sampled Session::sample_next() {
  STRATA_CHECK(impl_->sampler.has_value());
  Sampled next;
  next.token = impl_->sampler->sample(impl_->logits, impl_->context);
  next.end_of_generation =
      impl_->stop_at_end_of_generation && engine().is_end_of_generation(next.token);
  if (!next.end_of_generation)
    next.text = impl_->text.push(impl_->shared().tokenizer().decode_piece(next.token));
  return next;
}

std::string Session::finish_text() { return impl_->text.finish(); }

Result<std::vector<int32_t>> Session::generate(std::span<const int32_t> prompt,
                                               const GenerateOptions& options,
                                               const TokenCallback& on_token) {
  STRATA_RETURN_IF_ERROR(begin_generation(prompt, options).status());
  std::vector<int32_t> generated;
  for (int i = 0; i < options.max_tokens; ++i) {
    const Sampled next = sample_next();
    if (next.end_of_generation) break;
    generated.push_back(next.token);
    if (on_token && !on_token(next.token, next.text)) break;
    if (i + 1 == options.max_tokens) break;
    // A full context ends the continuation; the token sampled from it is kept.
    if (n_past() >= n_ctx()) break;
    STRATA_RETURN_IF_ERROR(feed({&next.token, 1}));
  }
  if (on_token) {
    const std::string rest = finish_text();
    if (!rest.empty()) on_token(-1, rest);
  }
  return generated;
}

Status Session::feed_together(std::span<Session* const> sessions, std::span<const int32_t> tokens) {
  STRATA_CHECK_EQ(sessions.size(), tokens.size());
  if (sessions.empty()) return Status();
  if (sessions.size() == 1) return sessions[0]->feed(tokens);
  Engine::Impl& e = sessions[0]->impl_->shared();
  std::vector<Transformer::SequenceToken> rows;
  for (size_t i = 0; i < sessions.size(); ++i) {
    Impl& session = *sessions[i]->impl_;
    STRATA_CHECK(&session.shared() == &e);
    if (int64_t(session.context.size()) >= session.cache->n_ctx())
      return Status::errorf("the context holds {} tokens; one more exceeds its size (use --ctx)",
                            session.context.size());
    rows.push_back({tokens[i], int64_t(session.context.size()), session.cache.get()});
  }
  std::lock_guard lock(e.forward);
  const Impl::StepStart start = sessions.front()->impl_->step_start();
  e.running = {.decoding = true};
  std::vector<float> logits;
  const Status status = e.transformer->forward_sequences(rows, logits);
  e.running = {};
  STRATA_RETURN_IF_ERROR(status);
  const size_t n_vocab = size_t(e.model().config().n_vocab);
  for (size_t i = 0; i < sessions.size(); ++i) {
    Impl& session = *sessions[i]->impl_;
    session.context.push_back(tokens[i]);
    session.logits.assign(logits.begin() + ptrdiff_t(i * n_vocab),
                          logits.begin() + ptrdiff_t((i + 1) * n_vocab));
    // Each session read what the step read: its counters are the step's, shared.
    session.record(false, 1, start);
  }
  return Status();
}

void Session::set_route_callback(RouteCallback callback) {
  impl_->route_callback = std::move(callback);
}
void Session::set_prediction_callback(PredictionCallback callback) {
  impl_->prediction_callback = std::move(callback);
}
void Session::set_router_input_callback(RouterInputCallback callback) {
  impl_->router_input_callback = std::move(callback);
}

}  // namespace strata
