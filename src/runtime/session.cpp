#include <strata/session.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "base/cpu_features.h"
#include "base/interrupt.h"
#include "base/regular_file.h"
#include "cpu/thread_pool.h"
#include "model/model.h"
#include "model/transformer.h"
#include "runtime/backend_factory.h"
#include "runtime/byte_size.h"
#include "runtime/chat_template.h"
#include "runtime/expert_usage.h"
#include "runtime/memory_plan.h"
#include "runtime/sampler.h"
#include "runtime/session_loader.h"
#include "runtime/tokenizer.h"
#include "runtime/unicode_bytes.h"

namespace strata {

double SessionStats::prefill_tokens_per_s() const {
  return prefill_ms > 0 ? double(prefill_tokens) / (prefill_ms / 1000.0) : 0.0;
}
double SessionStats::decode_tokens_per_s() const {
  return decode_ms > 0 ? double(decode_tokens) / (decode_ms / 1000.0) : 0.0;
}

bool streams_experts(const SessionOptions& options) {
  return options.memory_budget > 0 || options.arena_share > 0;
}

ExpertCounters SessionStats::decode_experts() const {
  ExpertCounters sum;
  for (const Step& step : steps)
    if (!step.prefill) sum += step.experts;
  return sum;
}

namespace {

// Small units are latency-bound: a read takes about as long whatever its size, longer than a
// layer's compute, so predicting two layers ahead turns late read-aheads into timely ones
// (strata-tiny-moe, 41 KB units: hits + timely read-ahead hits 71-72 % -> 76-77 % at a 25 %
// arena). Their disk is bound by reads per second, so the farther layer reads only its top
// two guesses (readahead_far): all eight read 14 % more and decoded 10 % slower on average, in
// 6 of 7 alternated pairs of `strata run --arena 25%` (README). Large units are bandwidth-bound:
// the wrong guesses of the farther layer take disk time from needed reads (30B-A3B shape, 2.6 MB
// units: 4.30 -> 3.82 tok/s at 25 %; with one read in flight, 5.74 -> 3.99).
int default_readahead_layers(const ExpertLayout& experts) {
  return experts.has_large_units() ? 1 : 2;
}

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

Result<uint64_t> parse_readahead_budget(std::string_view text) {
  if (text == "0") return uint64_t(0);
  Result<uint64_t> bytes = parse_byte_size(text);
  if (!bytes.ok()) return bytes.status().with_prefix("--readahead-budget");
  return bytes;
}

Result<MemoryBudget> parse_memory_budget(std::string_view text) {
  if (text == "auto") {
    const std::optional<AvailableMemory> available = available_memory();
    if (!available)
      return Status::error(
          "--mem auto: cannot read MemAvailable from /proc/meminfo nor a cgroup memory limit");
    return MemoryBudget{available->bytes / 10 * 8,  // 80 %: room for everyone else
                        fmt::format("--mem auto: 80 % of {} {}", format_bytes(available->bytes),
                                    available->source)};
  }
  // A share is what --arena takes (an arena holding that share of the experts); a budget of the
  // whole process as a share of something would leave unsaid of what.
  if (text.ends_with('%'))
    return Status::errorf(
        "--mem {}: a memory budget is a size (512M, 4G) or auto; for an expert arena holding {} of "
        "the experts use --arena {}",
        text, text, text);
  STRATA_ASSIGN_OR_RETURN(const uint64_t bytes, parse_byte_size(text));
  // 0 stands for "no budget" in SessionOptions; asked for, it would silently lift the bound.
  if (bytes == 0)
    return Status::errorf("--mem {}: a budget must be above zero (leave --mem out for none)", text);
  return MemoryBudget{bytes, ""};
}

struct Session::Impl {
  SessionOptions options;
  LoadedSession loaded;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<KvCache> cache;
  std::unique_ptr<Transformer> transformer;
  std::vector<int32_t> context;  // the tokens whose keys and values are in the cache
  std::vector<float> logits;     // after the last token fed
  SessionStats stats;
  ExpertCounters counters_at_reset;  // store counters when stats were last reset
  ExpertUsage usage;
  RouteCallback route_callback;
  int64_t batch_start = 0;  // position of the first token of the forward pass running now
  bool decoding = false;    // the forward pass running now is a single-token step

  Impl(const SessionOptions& o, LoadedSession l)
      : options(o),
        loaded(std::move(l)),
        usage(int(loaded.model->config().n_layer), int(loaded.model->config().n_expert)) {}
  const Model& model() const { return *loaded.model; }
  const runtime::Tokenizer& tokenizer() const { return *loaded.tokenizer; }
  Status feed(std::span<const int32_t> tokens, std::vector<float>* all_logits);
  void install_route_observer();
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

namespace {

// The options with their defaults filled in, checked against the model, and the backend the
// session computes on.
struct Resolved {
  SessionOptions options;
  std::unique_ptr<Backend> backend;
};

Result<Resolved> resolved(const SessionOptions& requested) {
  Resolved result{requested, nullptr};
  SessionOptions& options = result.options;
  if (options.n_threads <= 0) options.n_threads = ThreadPool::default_threads();
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(options.model_path));
  STRATA_ASSIGN_OR_RETURN(auto described, Model::describe(file));
  if (options.n_ctx <= 0) options.n_ctx = std::min<int64_t>(described->config().n_ctx_train, 4096);
  // More than a layer's experts would only evict what the arena holds for nothing.
  if (options.readahead > described->config().n_expert)
    return Status::errorf("--readahead {}: the model has {} experts per layer", options.readahead,
                          described->config().n_expert);
  STRATA_ASSIGN_OR_RETURN(
      result.backend,
      make_backend(described->config(), described->weight_formats(),
                   {.device = options.device, .gpu = options.gpu, .n_threads = options.n_threads}));
  // A budget's plan refuses a KV cache it cannot hold; without one, nothing else would before
  // the allocation failed (std::bad_alloc) or the kernel killed the process.
  const uint64_t kv_cache = result.backend->kv_cache_bytes(options.n_ctx);
  if (const std::optional<AvailableMemory> available = available_memory();
      options.memory_budget == 0 && available && kv_cache > available->bytes)
    return Status::errorf("--ctx {}: the KV cache needs {}, but {} are {}", options.n_ctx,
                          format_bytes(kv_cache), format_bytes(available->bytes),
                          available->source);
  const bool predictor = !options.next_expert_predictor_path.empty();
  if (options.cache_policy.empty()) options.cache_policy = predictor ? "predicted" : "successor";
  if (options.cache_policy == "predicted" && !predictor)
    return Status::error(
        "--cache-policy predicted needs a next-expert predictor: --predictor FILE (strata "
        "fit-predictor writes one)");
  // The predictor is read against the model once it is loaded; a missing file, or a FIFO that
  // could not be read, is said before the loading.
  if (predictor)
    STRATA_RETURN_IF_ERROR(RegularFile::open(options.next_expert_predictor_path).status());
  return result;
}

}  // namespace

Result<MemoryPlanSummary> Session::plan(const SessionOptions& requested) {
  STRATA_ASSIGN_OR_RETURN(const Resolved resolved_options, resolved(requested));
  return plan_session(resolved_options.options, *resolved_options.backend);
}

Result<std::unique_ptr<Session>> Session::open(const SessionOptions& requested) {
  STRATA_ASSIGN_OR_RETURN(Resolved resolved_options, resolved(requested));
  const SessionOptions& options = resolved_options.options;
  STRATA_ASSIGN_OR_RETURN(LoadedSession loaded,
                          load_session(options, *resolved_options.backend));
  auto impl = std::make_unique<Impl>(options, std::move(loaded));
  const ModelConfig& config = impl->model().config();
  impl->backend = std::move(resolved_options.backend);
  impl->loaded.experts->set_before_blocking([backend = impl->backend.get()] { backend->idle(); });
  STRATA_ASSIGN_OR_RETURN(impl->cache, impl->backend->make_kv_cache(options.n_ctx));
  impl->transformer =
      std::make_unique<Transformer>(impl->loaded.model, *impl->loaded.experts, *impl->backend);
  // Positions past the trained context rotate by angles the model never saw.
  if (!options.quiet && config.n_ctx_train > 0 && options.n_ctx > config.n_ctx_train)
    std::fprintf(stderr,
                 "note: a context of %lld tokens is longer than the %lld the model was trained "
                 "on; past that its output may degrade\n",
                 static_cast<long long>(options.n_ctx), static_cast<long long>(config.n_ctx_train));
  RoutingOptions routing;
  routing.moce_bonus = options.moce_bonus;
  routing.moce_protect = options.moce_protect;
  const bool streaming = streams_experts(options);
  if (!requested.cache_policy.empty() && !streaming && !options.quiet)
    std::fputs("note: --cache-policy only matters when experts stream (--mem or --arena)\n",
               stderr);
  if (!options.next_expert_predictor_path.empty()) {
    // Checked even when every expert is resident, so a wrong file is said at once.
    STRATA_ASSIGN_OR_RETURN(
        auto predictor, NextExpertPredictor::load(options.next_expert_predictor_path,
                                                  config.n_layer, config.n_embd, config.n_expert));
    if (streaming) {
      impl->transformer->set_next_expert_predictor(std::move(predictor));
    } else if (!options.quiet) {
      std::fputs("note: --predictor only matters when experts stream (--mem or --arena)\n", stderr);
    }
  }
  // A pool with a thread for every core leaves one core to the reads while a decode step has
  // some running: on the 2-vCPU VM, whose virtual disk reads 25-35 % slower while both vCPUs
  // compute, the 30B shape decoded 4-5 % faster at a 25 % arena and 12 % at 50 % (README,
  // "Streaming speed"). Prefill keeps every thread: it computes far more per byte read.
  if (streaming && options.n_threads > 1 &&
      options.n_threads >= int(std::thread::hardware_concurrency())) {
    impl->backend->spare_a_core_while(
        [impl = impl.get()] { return impl->decoding && impl->loaded.experts->reading(); });
  }
  routing.readahead = !streaming              ? 0
                      : options.readahead < 0 ? int(config.n_expert_used)
                                              : options.readahead;
  routing.readahead_layers = options.readahead_layers > 0
                                 ? options.readahead_layers
                                 : default_readahead_layers(impl->model().weights().experts);
  routing.readahead_far =
      options.readahead_far >= 0 ? options.readahead_far : std::min(routing.readahead, 2);
  routing.readahead_bytes_per_token = options.readahead_budget;
  impl->transformer->set_routing(routing);
  impl->install_route_observer();
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

void Session::Impl::install_route_observer() {
  // Usage counts feed the warm-start file; the callback, `strata trace`.
  transformer->set_route_observer(
      [this](int layer, int64_t index, std::span<const int32_t> experts) {
        for (int32_t e : experts) usage.add(layer, e);
        if (route_callback) route_callback(layer, batch_start + index, experts);
      });
}

std::vector<int32_t> Session::tokenize(std::string_view text, bool parse_special) const {
  std::vector<int32_t> ids;
  if (impl_->tokenizer().add_bos() && impl_->tokenizer().bos_id() >= 0)
    ids.push_back(impl_->tokenizer().bos_id());
  const auto encoded = impl_->tokenizer().encode(text, parse_special);
  ids.insert(ids.end(), encoded.begin(), encoded.end());
  return ids;
}

std::string Session::detokenize(std::span<const int32_t> tokens) const {
  std::string text;
  for (int32_t id : tokens)
    if (id >= 0 && id < impl_->tokenizer().token_count())
      text += impl_->tokenizer().decode_piece(id);
  return text;
}

Result<std::vector<int32_t>> Session::chat_prompt(std::span<const ChatMessage> messages) const {
  std::vector<runtime::ChatMessage> converted;
  for (const auto& m : messages) converted.push_back({m.role, m.content});
  STRATA_ASSIGN_OR_RETURN(auto ids, runtime::encode_chatml(impl_->tokenizer(), converted, true));
  if (impl_->tokenizer().add_bos() && impl_->tokenizer().bos_id() >= 0)
    ids.insert(ids.begin(), impl_->tokenizer().bos_id());
  return ids;
}

bool Session::is_end_of_generation(int32_t token) const { return impl_->tokenizer().is_eog(token); }
int64_t Session::n_vocab() const { return impl_->model().config().n_vocab; }
int64_t Session::n_ctx() const { return impl_->cache->n_ctx(); }
int64_t Session::n_past() const { return int64_t(impl_->context.size()); }
int64_t Session::n_ctx_train() const { return impl_->model().config().n_ctx_train; }

Status Session::check_fits_context(int64_t n_tokens, std::string_view what) const {
  if (n_tokens <= n_ctx()) return Status();
  const int64_t trained = n_ctx_train();
  const std::string reason =
      trained <= 0 ? "(--ctx)"
      : n_ctx() < trained
          ? fmt::format("(--ctx; the model was trained on {})", digit_groups(trained))
          : fmt::format("(the model was trained on {})", digit_groups(trained));
  return Status::errorf("{} has {} tokens but the context holds {} {}", what,
                        digit_groups(n_tokens), digit_groups(n_ctx()), reason);
}
std::span<const float> Session::logits() const { return impl_->logits; }
const SessionStats& Session::stats() const {
  impl_->stats.experts = impl_->loaded.experts->stats();
  impl_->stats.experts -= impl_->counters_at_reset;
  return impl_->stats;
}
void Session::reset_stats() {
  impl_->stats = SessionStats();
  impl_->counters_at_reset = impl_->loaded.experts->stats();
}
const std::string& Session::memory_plan() const { return impl_->loaded.memory_plan; }
uint64_t Session::peak_rss_bytes() { return strata::peak_rss_bytes(); }
Status Session::save_expert_usage() const {
  if (impl_->options.warm_path.empty()) return Status::error("no --warm file was given");
  ExpertUsage merged = impl_->usage;
  if (std::filesystem::exists(impl_->options.warm_path)) {
    const ModelConfig& config = impl_->model().config();
    STRATA_ASSIGN_OR_RETURN(
        const auto previous,
        ExpertUsage::load(impl_->options.warm_path, int(config.n_layer), int(config.n_expert)));
    merged.merge(previous);
  }
  return merged.save(impl_->options.warm_path);
}
void Session::reset() {
  impl_->context.clear();
  impl_->logits.clear();
}

Status Session::Impl::feed(std::span<const int32_t> tokens, std::vector<float>* all_logits) {
  if (tokens.empty()) return Status();
  if (int64_t(context.size() + tokens.size()) > cache->n_ctx())
    return Status::errorf("the context holds {} tokens; {} more exceed its size {} (use --ctx)",
                          context.size(), tokens.size(), cache->n_ctx());
  const auto start = std::chrono::steady_clock::now();
  const ExpertCounters before = loaded.experts->stats();
  const size_t chunk = size_t(std::max<int64_t>(1, options.prefill_chunk));
  if (all_logits) {
    // Exactly the rows that come back (the memory plan counts them): appending chunk by chunk
    // would let the vector double past them.
    all_logits->clear();
    all_logits->reserve(tokens.size() * size_t(model().config().n_vocab));
  }
  decoding = tokens.size() == 1;
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
    batch_start = int64_t(context.size());
    STRATA_RETURN_IF_ERROR(
        transformer->forward(part, int64_t(context.size()), *cache, all_logits != nullptr, logits));
    context.insert(context.end(), part.begin(), part.end());
    if (all_logits) all_logits->insert(all_logits->end(), logits.begin(), logits.end());
    fed += part.size();
  }
  if (all_logits) {
    const size_t n_vocab = size_t(model().config().n_vocab);
    logits.assign(all_logits->end() - ptrdiff_t(n_vocab), all_logits->end());
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const bool prefill = tokens.size() > 1;
  if (prefill) {
    stats.prefill_tokens += int64_t(fed);
    stats.prefill_ms += ms;
    transformer->release_scratch();  // the prompt's batch-sized buffers
  } else {
    stats.decode_tokens += 1;
    stats.decode_ms += ms;
  }
  ExpertCounters during = loaded.experts->stats();
  during -= before;
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

  SamplerOptions sampling;
  sampling.temperature = options.temperature;
  sampling.top_k = options.top_k;
  sampling.top_p = options.top_p;
  sampling.min_p = options.min_p;
  sampling.repeat_penalty = options.repeat_penalty;
  sampling.repeat_last_n = options.repeat_last_n;
  sampling.seed = options.seed;
  Sampler sampler(sampling);
  runtime::Utf8Stream text;
  std::vector<int32_t> generated;
  for (int i = 0; i < options.max_tokens; ++i) {
    const int32_t token = sampler.sample(impl_->logits, impl_->context);
    if (options.stop_at_end_of_generation && impl_->tokenizer().is_eog(token)) break;
    generated.push_back(token);
    if (on_token && !on_token(token, text.push(impl_->tokenizer().decode_piece(token)))) break;
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

uint64_t Session::decode_weight_bytes_per_token() const {
  return impl_->model().decode_bytes_per_token();
}

uint64_t Session::kv_cache_bytes_per_position() const {
  return impl_->backend->kv_cache_bytes_per_position();
}

const std::optional<ExpertReadPattern>& Session::expert_read_pattern() const {
  return impl_->loaded.read_pattern;
}

int Session::n_threads() const { return impl_->backend->n_threads(); }
int Session::n_layers() const { return int(impl_->model().config().n_layer); }
int Session::n_experts() const { return int(impl_->model().config().n_expert); }
int Session::n_experts_per_token() const { return int(impl_->model().config().n_expert_used); }

void Session::set_route_callback(RouteCallback callback) {
  impl_->route_callback = std::move(callback);
}

void Session::set_prediction_callback(PredictionCallback callback) {
  if (!callback) {
    impl_->transformer->set_prediction_observer(nullptr, 0);
    return;
  }
  impl_->transformer->set_prediction_observer(
      [impl = impl_.get(), callback = std::move(callback)](int layer, int64_t index,
                                                           std::span<const int32_t> experts) {
        callback(layer, impl->batch_start + index, experts);
      },
      int(impl_->model().config().n_expert_used));
}

void Session::set_router_input_callback(RouterInputCallback callback) {
  if (!callback) {
    impl_->transformer->set_router_input_observer(nullptr);
    return;
  }
  impl_->transformer->set_router_input_observer(
      [impl = impl_.get(), callback = std::move(callback)](int layer, int64_t n_tokens,
                                                           std::span<const float> inputs) {
        callback(layer, impl->batch_start, n_tokens, inputs);
      });
}

int Session::n_embd() const { return int(impl_->model().config().n_embd); }

std::string Session::describe() const {
  const ModelConfig& c = impl_->model().config();
  return fmt::format("{}: {} layers, {} experts (top-{}), context {}, {} threads, {} kernels; {}",
                     impl_->model().file().name(), c.n_layer, c.n_expert, c.n_expert_used,
                     impl_->cache->n_ctx(), impl_->backend->n_threads(), simd_kernels_name(),
                     impl_->loaded.store);
}

}  // namespace strata
