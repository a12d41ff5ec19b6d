#include "runtime/session_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>

#include "base/cpu_features.h"
#include "base/progress.h"
#include "experts/expert_arena.h"
#include "experts/file_reader.h"
#include "experts/host_tier_reader.h"
#include "experts/resident_expert_store.h"
#include "experts/staged_file_reader.h"
#include "experts/streaming_expert_store.h"
#include "model/next_expert_predictor.h"
#include "model/place_weights.h"
#include "model/tensor_data.h"
#include "runtime/byte_size.h"
#include "runtime/cpu_experts.h"
#include "runtime/device_memory_plan.h"
#include "runtime/expert_usage.h"
#include "runtime/memory_plan.h"

namespace strata {
namespace {

// Large units are read one at a time: a unit's bytes already keep the disk busy, and a demand
// miss that shares the disk with read-aheads in flight waits for their bytes too (30B-A3B
// shape, 2.6 MB units, 25 % arena: 1, 2 and 4 in flight gave 5.26, 4.86 and 3.89 tok/s, host
// wait 25, 46 and 57 ms a token). Small units' reads are latency-bound: 6 reads per I/O thread
// are kept in flight however many reads a unit takes, 4 units of a stacked file (three reads
// each) or 12 of a file in the unit layout (one each) at the default 2 threads. On
// strata-tiny-moe, twice that many reads decoded 15 % slower from the stacked file; from the
// unit layout, 4 and 12 units in flight decode equally fast and 12 bring in time the
// read-aheads that 4 deliver late (docs/cache-lab.md).
int default_io_depth(const ExpertLayout& experts, int io_threads, size_t alignment) {
  if (experts.has_large_units()) return 1;
  return std::max(1, 6 * io_threads / experts.most_reads_per_unit(alignment));
}

// What the arena does to the Q4_0 rows it reads, for the store's description.
struct ExpertRowOrder {
  bool grouped_in_file = false, grouped_after_read = false, ungrouped_after_read = false;
};
ExpertRowOrder expert_row_order(const ExpertLayout& layout) {
  ExpertRowOrder order;
  for (const LayerExpertLayout& l : layout.layers)
    for (const ExpertTensorLayout* slice : {&l.gate, &l.up, &l.down}) {
      order.grouped_in_file |= slice->grouped_in_file;
      order.grouped_after_read |= slice->grouped_after_read();
      order.ungrouped_after_read |= slice->ungrouped_after_read();
    }
  return order;
}

void note(const SessionOptions& options, NoteKind kind, std::string_view line) {
  if (options.on_note) options.on_note(kind, line);
}

// Says, once per process (bench and eval open many engines of one file), how `strata repack`
// would write the model to stream faster, where it would: units that take three small reads
// instead of one, or Q4_0 rows grouped after each read (only a CPU with the grouped kernel does
// that) instead of in the file (--grouped).
void note_faster_layout(const SessionOptions& options, bool split_reads,
                        const ExpertRowOrder& rows) {
  static std::atomic<bool> noted{false};
  if (!options.on_note || !(split_reads || rows.grouped_after_read) || noted.exchange(true)) return;
  note(options, NoteKind::kWarning,
       fmt::format(
           "note: `strata repack{}` writes this model with {}{}{}, which streams faster",
           rows.grouped_after_read ? " --grouped" : "",
           split_reads ? "each expert one read instead of three small ones" : "",
           split_reads && rows.grouped_after_read ? " and " : "",
           rows.grouped_after_read ? "its Q4_0 rows grouped already, not after each read" : ""));
}

// The model with every tensor in host memory: the file copied in, or its mapping read in.
Status load_every_tensor(const SessionOptions& options,
                         const std::shared_ptr<const gguf::GgufFile>& file,
                         LoadedSession& session) {
  const bool copied = copied_when_resident(*file);
  if (const std::optional<AvailableMemory> available = available_memory();
      available && file->file_size() > available->bytes) {
    // A copy that does not fit would be killed midway by the kernel, not refused by malloc.
    if (copied)
      return Status::errorf(
          "{}: keeping every expert resident needs {} of memory, but {} are {}; stream the "
          "experts with --mem auto (or --mem SIZE)",
          file->name(), format_bytes(file->file_size()), format_bytes(available->bytes),
          available->source);
    // A mapping works, but its pages are read from disk again at every token.
    note(options, NoteKind::kWarning,
         fmt::format("note: {} ({}) is larger than the {} {}: mapped whole, it pages from disk at "
                     "every token; --mem auto streams its experts instead",
                     file->name(), format_bytes(file->file_size()), format_bytes(available->bytes),
                     available->source));
  }
  std::optional<ProgressBar> progress;
  // Every expert stays in host memory, so the whole file is read in now.
  if (options.show_progress) progress.emplace("loading " + options.model_path, file->file_size());
  STRATA_ASSIGN_OR_RETURN(auto data,
                          load_resident_tensor_data(*file, progress ? &*progress : nullptr));
  if (progress) progress->finish();
  STRATA_ASSIGN_OR_RETURN(session.model, Model::load(file, std::move(data)));
  return Status();
}

Status load_resident(const SessionOptions& options, std::shared_ptr<const gguf::GgufFile> file,
                     LoadedSession& session) {
  STRATA_RETURN_IF_ERROR(load_every_tensor(options, file, session));
  session.experts = std::make_unique<ResidentExpertStore>(session.model->weights().experts);
  const bool copied = copied_when_resident(*file);
  const bool grouped = file->has(kQ4_0RowGroupsKey);
  session.store = !copied          ? "all experts resident (memory-mapped)"
                  : !avx512_vnni() ? "all experts resident (read into memory, Q4_0 rows "
                                     "ungrouped for this CPU)"
                  : grouped        ? "all experts resident (read into memory, Q4_0 rows grouped "
                                     "in the file)"
                                   : "all experts resident (read into memory, Q4_0 rows grouped)";
  return Status();
}

Result<MemoryPlan> make_plan(const SessionOptions& options, const Model& described,
                             const Backend& backend, const FileReader& reader) {
  MemoryPlanRequest request;
  request.budget_bytes = options.memory_budget;
  request.budget_basis = options.memory_budget_basis;
  request.n_ctx = options.n_ctx;
  request.batch = std::min(options.prefill_chunk, options.n_ctx);
  request.all_logits = options.teacher_forced;
  request.io_alignment = reader.alignment();
  request.cache_policy = options.cache_policy;
  if (!options.next_expert_predictor_path.empty()) {
    const ModelConfig& config = described.config();
    STRATA_ASSIGN_OR_RETURN(
        request.next_expert_predictor_bytes,
        NextExpertPredictor::bytes_to_load(options.next_expert_predictor_path, config.n_layer,
                                           config.n_embd, config.n_expert));
  }
  return plan_memory(described, backend, request, available_memory());
}

// A plan's lines as notes of their own kind.
void note_plan(const SessionOptions& options, std::string_view plan) {
  for (size_t begin = 0; begin < plan.size();) {
    const size_t end = plan.find('\n', begin);
    note(options, NoteKind::kPlan, plan.substr(begin, end - begin));
    begin = end == std::string::npos ? plan.size() : end + 1;
  }
}

// The arena's bytes: what the budget's plan leaves it (the plan is printed, and kept for
// memory_plan()), or the requested share of the expert units, at least what a token needs.
Result<uint64_t> arena_bytes_for(const SessionOptions& options, const Model& described,
                                 const Backend& backend, const FileReader& reader,
                                 LoadedSession& session) {
  const ExpertLayout& layout = described.weights().experts;
  if (options.memory_budget > 0) {
    STRATA_ASSIGN_OR_RETURN(const MemoryPlan plan, make_plan(options, described, backend, reader));
    session.memory_plan = plan.to_text();
    note_plan(options, session.memory_plan);
    STRATA_RETURN_IF_ERROR(plan.shortfall);
    return plan.arena_bytes;
  }
  const int k = int(described.config().n_expert_used);
  return std::max(ExpertArena::minimum_bytes(layout, reader.alignment(), k),
                  uint64_t(options.arena_share *
                           double(ExpertArena::all_units_bytes(layout, reader.alignment()))));
}

// How the experts stream, for describe(): the arena, the policy and the reads.
std::string streaming_store_description(const StreamingExpertStore& store,
                                        const ModelConfig& config, const SessionOptions& options,
                                        int io_depth, int reads_per_unit, bool direct,
                                        const ExpertRowOrder& rows) {
  const ExpertArena& arena = store.arena();
  const bool uring = store.io_backend() == IoBackend::kUring;
  return fmt::format(
      "experts streamed into a {} arena of {} slots ({} of {} units, {} "
      "policy, {} I/O threads, {} ({} in flight, {} a unit){}{})",
      format_bytes(arena.bytes()), arena.total_slots(),
      fmt::format("{:.0f} %",
                  100.0 * arena.total_slots() / double(config.n_layer * config.n_expert)),
      config.n_layer * config.n_expert, options.cache_policy, options.io_threads,
      io_backend_name(store.io_backend()), uring ? io_depth : options.io_threads,
      reads_per_unit == 1 ? "one read" : "three reads",
      direct ? ", O_DIRECT" : ", buffered: no O_DIRECT here",
      rows.grouped_after_read     ? ", Q4_0 rows grouped after each read"
      : rows.ungrouped_after_read ? ", Q4_0 rows ungrouped after each read (no grouped kernel)"
      : rows.grouped_in_file      ? ", Q4_0 rows grouped in the file"
                                  : "");
}

Status load_streaming(const SessionOptions& options, Backend& backend,
                      std::shared_ptr<const gguf::GgufFile> file, LoadedSession& session) {
  STRATA_ASSIGN_OR_RETURN(auto described, Model::describe(file));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<FileReader> reader, open_file_reader(file->parts()));
  const ExpertLayout& layout = described->weights().experts;
  STRATA_ASSIGN_OR_RETURN(const uint64_t arena_bytes,
                          arena_bytes_for(options, *described, backend, *reader, session));

  std::shared_ptr<LoadedTensorData> dense;
  {
    std::optional<ProgressBar> progress;
    if (options.show_progress)
      progress.emplace("loading dense weights",
                       LoadedTensorData::bytes_to_load(*file, reader->alignment(),
                                                       LoadedTensorData::Contents::kDense));
    STRATA_ASSIGN_OR_RETURN(
        dense, LoadedTensorData::load(*file, *reader, LoadedTensorData::Contents::kDense,
                                      progress ? &*progress : nullptr));
    if (progress) progress->finish();
  }
  STRATA_ASSIGN_OR_RETURN(session.model, Model::load(file, dense));
  const ModelConfig& config = session.model->config();

  StreamingStoreOptions store_options;
  store_options.arena_bytes = arena_bytes;
  store_options.policy = options.cache_policy;
  store_options.io_threads = options.io_threads;
  store_options.io_depth = options.io_depth > 0
                               ? options.io_depth
                               : default_io_depth(session.model->weights().experts,
                                                  options.io_threads, reader->alignment());
  STRATA_ASSIGN_OR_RETURN(store_options.backend, parse_io_backend(options.io_backend));
  STRATA_ASSIGN_OR_RETURN(
      auto store,
      StreamingExpertStore::create(
          session.model->weights().experts, int(config.n_expert_used), reader, store_options,
          [&backend](std::span<const SlotClassShape> classes, size_t alignment) {
            return backend.make_expert_slot_memory(classes, alignment);
          }));
  if (!options.warm_path.empty() && std::filesystem::exists(options.warm_path)) {
    STRATA_ASSIGN_OR_RETURN(
        const auto usage,
        ExpertUsage::load(options.warm_path, int(config.n_layer), int(config.n_expert)));
    const auto hottest = usage.hottest();
    STRATA_RETURN_IF_ERROR(store->preload(hottest));
  }
  const int reads_per_unit = layout.most_reads_per_unit(reader->alignment());
  const bool split_reads = reads_per_unit > 1 && !layout.has_large_units();
  const ExpertRowOrder rows = expert_row_order(session.model->weights().experts);
  note_faster_layout(options, split_reads, rows);
  session.read_pattern =
      ExpertReadPattern{.read_bytes = layout.largest_unit_read(reader->alignment()),
                        .in_flight = store->io_backend() == IoBackend::kUring
                                         ? store_options.io_depth * reads_per_unit
                                         : options.io_threads};
  session.store = streaming_store_description(*store, config, options, store_options.io_depth,
                                              reads_per_unit, reader->direct(), rows);
  session.experts = std::move(store);
  return Status();
}

// The bytes of an expert arena in the backend's own memory (a GPU's): what --gpu-mem's device
// plan leaves it (the plan is printed), or --arena's share of the units.
Result<uint64_t> device_arena_bytes(const SessionOptions& options, const Backend& backend,
                                    std::shared_ptr<const gguf::GgufFile> file,
                                    LoadedSession& session) {
  STRATA_ASSIGN_OR_RETURN(auto described, Model::describe(file));
  const ExpertLayout& experts = described->weights().experts;
  constexpr size_t kAlignment = HostTierReader::kAlignment;
  static_assert(kAlignment == StagedFileReader::kAlignment);
  if (options.gpu_memory_budget == 0) {
    // --mem alone (the disk tier) leaves the device's arena at every unit.
    const double share = options.arena_share > 0 ? options.arena_share : 1.0;
    const int k = int(described->config().n_expert_used);
    return std::max(ExpertArena::minimum_bytes(experts, kAlignment, k),
                    uint64_t(share * double(ExpertArena::all_units_bytes(experts, kAlignment))));
  }
  DeviceMemoryRequest request;
  request.budget_bytes = options.gpu_memory_budget;
  request.n_ctx = options.n_ctx;
  request.batch = std::min(options.prefill_chunk, options.n_ctx);
  request.all_logits = options.teacher_forced;
  request.next_expert_predictor = !options.next_expert_predictor_path.empty();
  request.alignment = kAlignment;
  const MemoryPlan plan = plan_device_memory(*described, backend, request);
  session.memory_plan = plan.to_text();
  note_plan(options, session.memory_plan);
  STRATA_RETURN_IF_ERROR(plan.shortfall);
  return plan.arena_bytes;
}

// The store of a device arena fed by `tier` (the host tier or the disk tier): copies on the
// I/O threads, each waited for on its own stream, of bytes already in the order the backend
// computes with. `attach` points the tier at the slots once they are made.
Result<std::unique_ptr<StreamingExpertStore>> make_device_store(
    const SessionOptions& options, Backend& backend, const LoadedSession& session,
    uint64_t arena_bytes, std::shared_ptr<FileReader> tier,
    const std::function<Status(ExpertSlotMemory&)>& attach,
    std::function<void(ExpertCounters&)> add_tier_counters = {}, MissesOnHost misses_on_host = {}) {
  StreamingStoreOptions store_options;
  store_options.misses_on_host = misses_on_host;
  store_options.add_tier_counters = std::move(add_tier_counters);
  store_options.arena_bytes = arena_bytes;
  store_options.policy = options.cache_policy;
  store_options.io_threads = options.io_threads;
  store_options.backend = IoBackend::kPread;
  store_options.reads_in_compute_order = true;
  const ModelConfig& config = session.model->config();
  STRATA_ASSIGN_OR_RETURN(
      auto store,
      StreamingExpertStore::create(
          session.model->weights().experts, int(config.n_expert_used), tier, store_options,
          [&](std::span<const SlotClassShape> classes,
              size_t alignment) -> Result<std::unique_ptr<ExpertSlotMemory>> {
            STRATA_ASSIGN_OR_RETURN(auto memory,
                                    backend.make_expert_slot_memory(classes, alignment));
            STRATA_RETURN_IF_ERROR(attach(*memory));
            return memory;
          }));
  if (!options.warm_path.empty() && std::filesystem::exists(options.warm_path)) {
    STRATA_ASSIGN_OR_RETURN(
        const auto usage,
        ExpertUsage::load(options.warm_path, int(config.n_layer), int(config.n_expert)));
    STRATA_RETURN_IF_ERROR(store->preload(usage.hottest()));
  }
  return store;
}

// The device arena's part of the store's description.
std::string device_arena_description(const ExpertArena& arena, const ModelConfig& config,
                                     const SessionOptions& options) {
  return fmt::format(
      "a {} device arena of {} slots ({:.0f} % of {} units, {} policy, {} copy threads)",
      format_bytes(arena.bytes()), arena.total_slots(),
      100.0 * arena.total_slots() / double(config.n_layer * config.n_expert),
      config.n_layer * config.n_expert, options.cache_policy, options.io_threads);
}

// An expert arena in the backend's own memory (a GPU's): every expert in host memory as the
// resident engine holds it (the host tier), copied into the arena's slots as routed to and
// read ahead, on the store's I/O threads. The dense weights go to the device here, before the
// host tier is page-locked: the span it locks holds dense tensors too, and a copy from host
// memory that is page-locked only in part is refused (cudaMemcpy: invalid argument).
Status load_host_tier(const SessionOptions& options, Backend& backend,
                      std::shared_ptr<const gguf::GgufFile> file, LoadedSession& session) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t arena_bytes,
                          device_arena_bytes(options, backend, file, session));
  STRATA_RETURN_IF_ERROR(load_every_tensor(options, file, session));
  const ExpertLayout& experts = session.model->weights().experts;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<HostTierReader> tier,
                          HostTierReader::create(experts, file->name(), file->file_size()));
  STRATA_RETURN_IF_ERROR(place_weights(*session.model, backend, PlacedExperts::kNone));
  STRATA_ASSIGN_OR_RETURN(
      CpuExperts cpu_experts,
      plan_cpu_experts(options, backend, *session.model,
                       [&](std::string_view line) { note(options, NoteKind::kWarning, line); }));
  bool pinned = false;
  STRATA_ASSIGN_OR_RETURN(auto store, make_device_store(
                                          options, backend, session, arena_bytes, tier,
                                          [&](ExpertSlotMemory& m) {
                                            tier->write_into(m);
                                            pinned = m.pin_source(tier->first_byte(),
                                                                  tier->span_bytes());
                                            return Status();
                                          },
                                          {}, cpu_experts.rule));
  session.host_experts = std::move(cpu_experts.host);
  if (!pinned)
    note(options, NoteKind::kWarning,
         "note: the host tier could not be page-locked: expert copies to the device run from "
         "pageable memory, at a fraction of the bus's speed");
  session.read_pattern =
      ExpertReadPattern{.read_bytes = experts.largest_unit_read(HostTierReader::kAlignment),
                        .in_flight = options.io_threads};
  session.store =
      fmt::format("experts copied from host memory ({}, {}) into {}",
                  format_bytes(tier->span_bytes()), pinned ? "page-locked" : "pageable",
                  device_arena_description(store->arena(), session.model->config(), options));
  session.experts = std::move(store);
  return Status();
}

// Host memory the disk tier keeps under --mem: the process as it is (the runtime, the
// device's context, the tokenizer), the dense weights until they are on the device, a staging
// buffer per copy thread and a margin for what grows later (the device context's first kernels,
// allocator slack); what is left is the host arena's. Refused before loading when the rest is
// above the budget.
Result<uint64_t> disk_tier_host_arena_bytes(const SessionOptions& options,
                                            const gguf::GgufFile& file, size_t read_alignment,
                                            size_t staging_bytes) {
  constexpr uint64_t kMargin = uint64_t(256) << 20;
  const uint64_t runtime = current_rss_bytes();
  const uint64_t dense =
      LoadedTensorData::bytes_to_load(file, read_alignment, LoadedTensorData::Contents::kDense);
  const uint64_t staging = uint64_t(options.io_threads) * staging_bytes;
  const uint64_t total = runtime + dense + staging + kMargin;
  const std::string lines = fmt::format(
      "host memory for experts read from the file: runtime and device context {} (measured) "
      "+ dense weights {} + staging {} x {} + margin {} = {} of --mem {}",
      format_bytes(runtime), format_bytes(dense), options.io_threads, format_bytes(staging_bytes),
      format_bytes(kMargin), format_bytes(total), format_bytes(options.memory_budget));
  if (total > options.memory_budget)
    return Status::errorf("--mem {}: too small for --device cuda, which needs at least {} ({})",
                          format_bytes(options.memory_budget), format_bytes(total), lines);
  note(options, NoteKind::kPlan,
       lines + fmt::format(", the host arena the rest: {}",
                           format_bytes(options.memory_budget - total)));
  return options.memory_budget - total;
}

// An expert arena in the backend's own memory fed from the model file (the disk tier, for
// --mem): the dense weights loaded and placed on the device, each routed or read-ahead expert
// read from the file into a page-locked staging buffer and copied into its slot.
Status load_disk_tier(const SessionOptions& options, Backend& backend,
                      std::shared_ptr<const gguf::GgufFile> file, LoadedSession& session) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t arena_bytes,
                          device_arena_bytes(options, backend, file, session));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<FileReader> reader, open_file_reader(file->parts()));
  if (options.cpu_experts != 0)
    note(options, NoteKind::kWarning,
         "note: --cpu-experts needs every expert in host memory: off under --mem, where they "
         "are read from the file");
  uint64_t host_arena_bytes = 0;
  {
    STRATA_ASSIGN_OR_RETURN(auto described, Model::describe(file));
    STRATA_ASSIGN_OR_RETURN(host_arena_bytes,
                            disk_tier_host_arena_bytes(options, *file, reader->alignment(),
                                                       StagedFileReader::staging_bytes_for(
                                                           *reader, described->weights().experts)));
  }
  std::optional<ProgressBar> progress;
  if (options.show_progress)
    progress.emplace("loading dense weights",
                     LoadedTensorData::bytes_to_load(*file, reader->alignment(),
                                                     LoadedTensorData::Contents::kDense));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<LoadedTensorData> dense,
                          LoadedTensorData::load(*file, *reader, LoadedTensorData::Contents::kDense,
                                                 progress ? &*progress : nullptr));
  if (progress) progress->finish();
  STRATA_ASSIGN_OR_RETURN(session.model, Model::load(file, dense));
  const ExpertLayout& experts = session.model->weights().experts;
  auto tier = std::make_shared<StagedFileReader>(
      reader, experts,
      [](uint8_t* slice, const ExpertTensorLayout& t) {
        reorder_rows(slice, t.n_in, t.n_out, t.grouped_in_file, t.grouped_rows);
      },
      host_arena_bytes);
  STRATA_ASSIGN_OR_RETURN(
      auto store, make_device_store(
                      options, backend, session, arena_bytes, tier,
                      [&](ExpertSlotMemory& m) { return tier->write_into(m, options.io_threads); },
                      // The store holds the reader, so it outlives the counters' reads of it.
                      [counted = tier.get()](ExpertCounters& c) {
                        const HostExpertCache::Counters held = counted->host_arena_counters();
                        c.host_arena_hits = held.hits;
                        c.host_arena_misses = held.misses;
                      }));
  session.read_pattern =
      ExpertReadPattern{.read_bytes = experts.largest_unit_read(reader->alignment()),
                        .in_flight = options.io_threads};
  const uint64_t held = uint64_t(tier->host_arena_slots()) * tier->staging_bytes();
  session.store = fmt::format(
      "experts read from the file ({}) through {} staging buffers of {} and a host arena of {} "
      "({} slots, {:.0f} % of the experts' {}) into {}",
      reader->direct() ? "O_DIRECT" : "buffered: no O_DIRECT here",
      tier->staging_pinned() ? "page-locked" : "pageable", format_bytes(tier->staging_bytes()),
      format_bytes(held), tier->host_arena_slots(),
      100.0 * double(held) / double(experts.total_bytes()), format_bytes(experts.total_bytes()),
      device_arena_description(store->arena(), session.model->config(), options));
  session.experts = std::move(store);
  return Status();
}

}  // namespace

Result<MemoryPlanSummary> plan_session(const SessionOptions& options, const Backend& backend) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(options.model_path));
  STRATA_ASSIGN_OR_RETURN(const auto tokenizer, runtime::Tokenizer::from_gguf(*file));
  STRATA_ASSIGN_OR_RETURN(auto described, Model::describe(file));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<FileReader> reader, open_file_reader(file->parts()));
  STRATA_ASSIGN_OR_RETURN(const MemoryPlan plan, make_plan(options, *described, backend, *reader));
  return MemoryPlanSummary{plan.to_text(), plan.shortfall};
}

Result<LoadedSession> load_session(const SessionOptions& options, Backend& backend) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(options.model_path));
  LoadedSession session;
  STRATA_ASSIGN_OR_RETURN(auto tokenizer, runtime::Tokenizer::from_gguf(*file));
  session.tokenizer.emplace(std::move(tokenizer));
  const bool device_arena = streams_experts(options) && backend.computes_from_own_memory();
  if (options.gpu_memory_budget > 0 && !backend.computes_from_own_memory())
    return Status::error("--gpu-mem: the model computes on the CPU here; it is for --device cuda");
  if (device_arena && options.memory_budget > 0) {
    STRATA_RETURN_IF_ERROR(load_disk_tier(options, backend, file, session));
  } else if (device_arena) {
    STRATA_RETURN_IF_ERROR(load_host_tier(options, backend, file, session));
  } else if (streams_experts(options)) {
    STRATA_RETURN_IF_ERROR(load_streaming(options, backend, file, session));
  } else {
    STRATA_RETURN_IF_ERROR(load_resident(options, file, session));
  }
  // The host tier placed its dense weights itself (load_host_tier).
  if (!device_arena || options.memory_budget > 0)
    STRATA_RETURN_IF_ERROR(place_weights(
        *session.model, backend, device_arena ? PlacedExperts::kNone : PlacedExperts::kResident));
  if (session.tokenizer->token_count() > session.model->config().n_vocab)
    return Status::errorf("{}: the tokenizer has {} tokens but the embedding only {}", file->name(),
                          session.tokenizer->token_count(), session.model->config().n_vocab);
  return session;
}

}  // namespace strata
