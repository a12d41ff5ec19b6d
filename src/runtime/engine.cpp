#include <strata/engine.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "base/regular_file.h"
#include "cpu/thread_pool.h"
#include "model/model.h"
#include "runtime/backend_factory.h"
#include "runtime/byte_size.h"
#include "runtime/chat_template.h"
#include "runtime/engine_impl.h"
#include "runtime/memory_plan.h"

namespace strata {
namespace {

// Small units are latency-bound: a read takes about as long whatever its size, longer than a
// layer's compute, so predicting two layers ahead turns late read-aheads into timely ones
// (strata-tiny-moe, 41 KB units: hits + timely read-ahead hits 71-72 % -> 76-77 % at a 25 %
// arena). Their disk is bound by reads per second, so the farther layer reads only its top
// two guesses (readahead_far): all eight read 14 % more and decoded 10 % slower on average, in
// 6 of 7 alternated pairs of `strata run --arena 25%` (docs/cache-lab.md). Large units are
// bandwidth-bound: the wrong guesses of the farther layer take disk time from needed reads (30B-A3B
// shape, 2.6 MB units: 4.30 -> 3.82 tok/s at 25 %; with one read in flight, 5.74 -> 3.99).
int default_readahead_layers(const ExpertLayout& experts) {
  return experts.has_large_units() ? 1 : 2;
}

// The options with their defaults filled in, checked against the model, and the backend the
// engine computes on.
struct Resolved {
  SessionOptions options;
  std::unique_ptr<Backend> backend;
};

Result<Resolved> resolved(const SessionOptions& requested) {
  Resolved result{requested, nullptr};
  SessionOptions& options = result.options;
  if (options.n_threads <= 0) options.n_threads = ThreadPool::default_threads();
  if (options.sessions < 1)
    return Status::errorf("sessions: expected 1 or more, got {}", options.sessions);
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
  // A budget's plan refuses KV caches it cannot hold; without one, nothing else would before
  // the allocation failed (std::bad_alloc) or the kernel killed the process.
  const uint64_t kv_cache =
      result.backend->kv_cache_bytes(options.n_ctx) * uint64_t(options.sessions);
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

RoutingOptions routing_options(const SessionOptions& options, const ModelConfig& config,
                               const ExpertLayout& experts) {
  const bool streaming = streams_experts(options);
  RoutingOptions routing;
  routing.moce_bonus = options.moce_bonus;
  routing.moce_protect = options.moce_protect;
  routing.readahead = !streaming              ? 0
                      : options.readahead < 0 ? int(config.n_expert_used)
                                              : options.readahead;
  routing.readahead_layers =
      options.readahead_layers > 0 ? options.readahead_layers : default_readahead_layers(experts);
  routing.readahead_far =
      options.readahead_far >= 0 ? options.readahead_far : std::min(routing.readahead, 2);
  routing.readahead_bytes_per_token = options.readahead_budget;
  return routing;
}

// What the options ask for that does not apply, said once at the start.
void note_what_does_not_apply(const Engine::Impl& engine, const SessionOptions& requested) {
  const SessionOptions& options = engine.options;
  const ModelConfig& config = engine.model().config();
  // Positions past the trained context rotate by angles the model never saw.
  if (config.n_ctx_train > 0 && options.n_ctx > config.n_ctx_train)
    engine.note(fmt::format(
        "note: a context of {} tokens is longer than the {} the model was trained on; past that "
        "its output may degrade",
        options.n_ctx, config.n_ctx_train));
  if (options.cpu_experts != 0 &&
      !(streams_experts(options) && engine.backend->computes_from_own_memory()))
    engine.note(
        "note: --cpu-experts only matters for an expert arena in a device's memory (--device "
        "cuda with --gpu-mem or --arena)");
  if (streams_experts(options)) return;
  if (!requested.cache_policy.empty())
    engine.note("note: --cache-policy only matters when experts stream (--mem or --arena)");
  if (!options.next_expert_predictor_path.empty())
    engine.note("note: --predictor only matters when experts stream (--mem or --arena)");
}

// The layer loop over the loaded model, its observers reporting to the running session.
Status start_transformer(Engine::Impl& engine) {
  const SessionOptions& options = engine.options;
  const ModelConfig& config = engine.model().config();
  engine.loaded.experts->set_before_blocking([backend = engine.backend.get()] { backend->idle(); });
  engine.transformer =
      std::make_unique<Transformer>(engine.loaded.model, *engine.loaded.experts, *engine.backend);
  if (engine.loaded.host_experts)
    engine.transformer->set_host_experts(std::move(engine.loaded.host_experts));
  const bool streaming = streams_experts(options);
  if (!options.next_expert_predictor_path.empty()) {
    // Checked even when every expert is resident, so a wrong file is said at once.
    STRATA_ASSIGN_OR_RETURN(
        auto predictor, NextExpertPredictor::load(options.next_expert_predictor_path,
                                                  config.n_layer, config.n_embd, config.n_expert));
    if (streaming) engine.transformer->set_next_expert_predictor(std::move(predictor));
  }
  // A pool with a thread for every core leaves one core to the reads while a decode step has
  // some running: on the 2-vCPU VM, whose virtual disk reads 25-35 % slower while both vCPUs
  // compute, the 30B shape decoded 4-5 % faster at a 25 % arena and 12 % at 50 %
  // (docs/streaming-speed.md). Prefill keeps every thread: it computes far more per byte read.
  if (streaming && options.n_threads > 1 &&
      options.n_threads >= int(std::thread::hardware_concurrency())) {
    engine.backend->spare_a_core_while(
        [&engine] { return engine.running.decoding && engine.loaded.experts->reading(); });
  }
  engine.transformer->set_routing(
      routing_options(options, config, engine.model().weights().experts));
  // Usage counts feed the warm-start file; the callback, `strata trace`.
  engine.transformer->set_route_observer([&engine](int layer, int64_t index,
                                                   std::span<const int32_t> experts,
                                                   std::span<const float>) {
    for (int32_t e : experts) engine.usage.add(layer, e);
    if (engine.running.route && *engine.running.route)
      (*engine.running.route)(layer, engine.running.batch_start + index, experts);
  });
  return Status();
}

}  // namespace

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

Result<MemoryPlanSummary> Engine::plan(const SessionOptions& requested) {
  STRATA_ASSIGN_OR_RETURN(const Resolved resolved_options, resolved(requested));
  return plan_session(resolved_options.options, *resolved_options.backend);
}

Result<std::shared_ptr<Engine>> Engine::open(const SessionOptions& requested) {
  STRATA_ASSIGN_OR_RETURN(Resolved resolved_options, resolved(requested));
  STRATA_ASSIGN_OR_RETURN(LoadedSession loaded,
                          load_session(resolved_options.options, *resolved_options.backend));
  auto impl = std::make_unique<Impl>(resolved_options.options, std::move(loaded));
  impl->backend = std::move(resolved_options.backend);
  STRATA_RETURN_IF_ERROR(start_transformer(*impl));
  note_what_does_not_apply(*impl, requested);
  return std::shared_ptr<Engine>(new Engine(std::move(impl)));
}

std::vector<int32_t> Engine::tokenize(std::string_view text, bool parse_special) const {
  std::vector<int32_t> ids;
  if (impl_->tokenizer().add_bos() && impl_->tokenizer().bos_id() >= 0)
    ids.push_back(impl_->tokenizer().bos_id());
  const auto encoded = impl_->tokenizer().encode(text, parse_special);
  ids.insert(ids.end(), encoded.begin(), encoded.end());
  return ids;
}

std::string Engine::detokenize(std::span<const int32_t> tokens) const {
  std::string text;
  for (int32_t id : tokens)
    if (id >= 0 && id < impl_->tokenizer().token_count())
      text += impl_->tokenizer().decode_piece(id);
  return text;
}

Result<std::vector<int32_t>> Engine::chat_prompt(std::span<const ChatMessage> messages) const {
  std::vector<runtime::ChatMessage> converted;
  for (const auto& m : messages) converted.push_back({m.role, m.content});
  STRATA_ASSIGN_OR_RETURN(auto ids, runtime::encode_chatml(impl_->tokenizer(), converted, true));
  if (impl_->tokenizer().add_bos() && impl_->tokenizer().bos_id() >= 0)
    ids.insert(ids.begin(), impl_->tokenizer().bos_id());
  return ids;
}

bool Engine::is_end_of_generation(int32_t token) const { return impl_->tokenizer().is_eog(token); }
int64_t Engine::n_vocab() const { return impl_->model().config().n_vocab; }
int64_t Engine::n_ctx() const { return impl_->options.n_ctx; }
int64_t Engine::n_ctx_train() const { return impl_->model().config().n_ctx_train; }
int Engine::n_embd() const { return int(impl_->model().config().n_embd); }
int Engine::n_layers() const { return int(impl_->model().config().n_layer); }
int Engine::n_experts() const { return int(impl_->model().config().n_expert); }
int Engine::n_experts_per_token() const { return int(impl_->model().config().n_expert_used); }
int Engine::n_threads() const { return impl_->backend->n_threads(); }

std::string Engine::describe() const {
  const ModelConfig& c = impl_->model().config();
  return fmt::format("{}: {} layers, {} experts (top-{}), context {}, {}; {}",
                     impl_->model().file().name(), c.n_layer, c.n_expert, c.n_expert_used,
                     impl_->options.n_ctx, impl_->backend->describe(), impl_->loaded.store);
}

std::string Engine::backend_description() const { return impl_->backend->describe(); }

std::optional<double> Engine::measure_device_bandwidth() const {
  std::lock_guard lock(impl_->forward);
  return impl_->backend->measure_memory_bandwidth();
}

std::optional<double> Engine::measure_host_to_device_bandwidth() const {
  std::lock_guard lock(impl_->forward);
  return impl_->backend->measure_host_to_device_bandwidth();
}

const std::string& Engine::memory_plan() const { return impl_->loaded.memory_plan; }

ExpertCounters Engine::expert_counters() const {
  std::lock_guard lock(impl_->forward);
  return impl_->loaded.experts->stats();
}

std::vector<uint8_t> Engine::expert_residency() const {
  const int n_layer = n_layers(), n_expert = n_experts();
  std::vector<uint8_t> resident(static_cast<size_t>(n_layer * n_expert));
  std::lock_guard lock(impl_->forward);
  for (int layer = 0; layer < n_layer; ++layer)
    for (int expert = 0; expert < n_expert; ++expert)
      resident[size_t(layer * n_expert + expert)] =
          impl_->loaded.experts->is_resident(layer, expert) ? 1 : 0;
  return resident;
}

Status Engine::save_expert_usage() const {
  const std::string& path = impl_->options.warm_path;
  if (path.empty()) return Status::error("no --warm file was given");
  ExpertUsage merged = [&] {
    std::lock_guard lock(impl_->forward);
    return impl_->usage;
  }();
  if (std::filesystem::exists(path)) {
    const ModelConfig& config = impl_->model().config();
    STRATA_ASSIGN_OR_RETURN(const auto previous,
                            ExpertUsage::load(path, int(config.n_layer), int(config.n_expert)));
    merged.merge(previous);
  }
  return merged.save(path);
}

uint64_t Engine::decode_weight_bytes_per_token() const {
  return impl_->model().decode_bytes_per_token();
}

uint64_t Engine::kv_cache_bytes_per_position() const {
  return impl_->backend->kv_cache_bytes_per_position();
}

const std::optional<ExpertReadPattern>& Engine::expert_read_pattern() const {
  return impl_->loaded.read_pattern;
}

uint64_t Engine::peak_rss_bytes() { return strata::peak_rss_bytes(); }

std::optional<uint64_t> Engine::peak_device_bytes() const {
  return impl_->backend->peak_own_memory_bytes();
}

}  // namespace strata
