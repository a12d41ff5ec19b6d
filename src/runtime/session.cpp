#include <strata/session.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

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

  ~Impl() {
    std::lock_guard lock(engine->impl_->sessions);
    --engine->impl_->open_sessions;
  }
  Engine::Impl& shared() const { return *engine->impl_; }
  Status feed(std::span<const int32_t> tokens, std::vector<float>* all_logits);
  // One forward pass of `part` at the context's end, with this session's observers.
  Status forward(std::span<const int32_t> part, bool all_logits);
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
void Session::reset() {
  impl_->context.clear();
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
  const auto start = std::chrono::steady_clock::now();
  const ExpertCounters before = e.loaded.experts->stats();
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
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const bool prefill = tokens.size() > 1;
  if (prefill) {
    stats.prefill_tokens += int64_t(fed);
    stats.prefill_ms += ms;
    e.transformer->release_scratch();  // the prompt's batch-sized buffers
  } else {
    stats.decode_tokens += 1;
    stats.decode_ms += ms;
  }
  ExpertCounters during = e.loaded.experts->stats();
  during -= before;
  stats.experts += during;
  stats.steps.push_back({prefill, int64_t(fed), ms, during});
  return stopped;
}

Status Session::feed(std::span<const int32_t> tokens) { return impl_->feed(tokens, nullptr); }

Status Session::feed_teacher_forced(std::span<const int32_t> tokens, std::vector<float>& logits) {
  return impl_->feed(tokens, &logits);
}

Result<std::vector<int32_t>> Session::generate(std::span<const int32_t> prompt,
                                               const GenerateOptions& options,
                                               const TokenCallback& on_token) {
  if (prompt.empty()) return Status::error("generate: empty prompt");
  // Reuse the cached prefix; at least one prompt token is fed to get fresh logits.
  size_t shared = 0;
  while (shared < impl_->context.size() && shared < prompt.size() &&
         impl_->context[shared] == prompt[shared])
    ++shared;
  shared = std::min(shared, prompt.size() - 1);
  impl_->context.resize(shared);
  STRATA_RETURN_IF_ERROR(impl_->feed(prompt.subspan(shared), nullptr));

  const Engine& model = engine();
  Sampler sampler({.temperature = options.temperature,
                   .top_k = options.top_k,
                   .top_p = options.top_p,
                   .min_p = options.min_p,
                   .repeat_penalty = options.repeat_penalty,
                   .repeat_last_n = options.repeat_last_n,
                   .seed = options.seed});
  const runtime::Tokenizer& tokenizer = impl_->shared().tokenizer();
  runtime::Utf8Stream text;
  std::vector<int32_t> generated;
  for (int i = 0; i < options.max_tokens; ++i) {
    const int32_t token = sampler.sample(impl_->logits, impl_->context);
    if (options.stop_at_end_of_generation && model.is_end_of_generation(token)) break;
    generated.push_back(token);
    if (on_token && !on_token(token, text.push(tokenizer.decode_piece(token)))) break;
    if (i + 1 == options.max_tokens) break;
    // A full context ends the continuation; the token sampled from it is kept.
    if (int64_t(impl_->context.size()) >= impl_->cache->n_ctx()) break;
    STRATA_RETURN_IF_ERROR(impl_->feed({&token, 1}, nullptr));
  }
  if (on_token) {
    const std::string rest = text.finish();
    if (!rest.empty()) on_token(-1, rest);
  }
  return generated;
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
