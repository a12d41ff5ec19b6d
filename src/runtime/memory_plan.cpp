#include "runtime/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "base/kernel_stat_file.h"
#include "experts/expert_arena.h"
#include "experts/replacement_policy.h"
#include "model/tensor_data.h"
#include "model/transformer.h"
#include "runtime/byte_size.h"
#include "runtime/cgroup_memory.h"

namespace strata {
namespace {

// What the process holds beyond the lines: thread stacks, io_uring rings, the allocator's
// arenas and headers, the code pages the kernels touch after the first line is measured, and the
// store's and policy's few words per unit. Measured as peak RSS (`strata run --mem B --stats F`)
// minus the lines, with prompts that fill a prefill chunk so that every line is used whole: 0.7
// to 1.1 MiB on strata-tiny-moe (8 x 64 units; budgets 46 MiB to 1 GiB, 1 to 8 compute and 2
// to 8 I/O threads, io_uring and pread, chunks of 256 and 512), 1.5 to 2.0 MiB on the `deep`
// preset (48 x 128 units, the 30B's depth; every policy, read-ahead on and off). It grows by
// about 170 bytes a unit, so 4 MiB holds to some 18,000 units (Qwen3-235B-A22B has 12,032) and
// does not grow with the budget.
constexpr uint64_t kMarginBytes = uint64_t(4) << 20;

}  // namespace

std::string alignment_text(size_t alignment) {
  return alignment % 1024 == 0 ? fmt::format("{} KiB", alignment / 1024)
                               : fmt::format("{} B", alignment);
}

uint64_t current_rss_bytes() {
  return kernel_stat_field("/proc/self/status", "VmRSS").value_or(0) * 1024;
}
uint64_t peak_rss_bytes() {
  return kernel_stat_field("/proc/self/status", "VmHWM").value_or(0) * 1024;
}

std::optional<AvailableMemory> available_memory() {
  std::optional<AvailableMemory> available;
  if (const std::optional<uint64_t> kib = kernel_stat_field("/proc/meminfo", "MemAvailable"))
    available = AvailableMemory{*kib * 1024, "available on this machine"};
  if (const std::optional<uint64_t> headroom = cgroup_memory_headroom();
      headroom && (!available || *headroom < available->bytes))
    available = AvailableMemory{*headroom, "left below the memory cgroup's limit"};
  return available;
}

std::pair<uint64_t, uint64_t> plan_arena(const Model& model, size_t alignment, MemoryPlan& plan) {
  const ModelConfig& config = model.config();
  uint64_t fixed = 0;
  for (const auto& line : plan.lines) fixed += line.bytes;
  const ExpertLayout& experts = model.weights().experts;
  const int k = int(config.n_expert_used);
  const uint64_t arena_minimum = ExpertArena::minimum_bytes(experts, alignment, k);
  plan.minimum_budget_bytes = fixed + arena_minimum;
  plan.arena_bytes = plan.budget_bytes > fixed ? plan.budget_bytes - fixed : 0;
  plan.expert_units = int64_t(config.n_layer) * int64_t(config.n_expert);
  if (plan.arena_bytes >= arena_minimum) {
    for (const ExpertArena::SizeClass& c :
         ExpertArena::plan(experts, plan.arena_bytes, alignment, k)) {
      plan.arena_slots += c.n_slots;
      plan.arena_slot_bytes += uint64_t(c.slot_bytes) * uint64_t(c.n_slots);
    }
  }
  return {fixed, arena_minimum};
}

MemoryPlan plan_memory(const Model& model, const Backend& backend, const MemoryPlanRequest& request,
                       const std::optional<AvailableMemory>& available) {
  const ModelConfig& config = model.config();
  const gguf::GgufFile& file = model.file();
  MemoryPlan plan;
  plan.budget_bytes = request.budget_bytes;
  plan.budget_basis = request.budget_basis;
  const uint64_t dense = LoadedTensorData::bytes_to_load(file, request.io_alignment,
                                                         LoadedTensorData::Contents::kDense);
  plan.lines = {
      {"runtime, metadata and tokenizer (measured)", current_rss_bytes()},
      // The same tensors inspect counts, read in runs widened to the reader's alignment.
      {fmt::format("dense weights: {} of tensors, {}-aligned",
                   format_bytes(dense_tensor_bytes(file)), alignment_text(request.io_alignment)),
       dense},
      {fmt::format("KV cache ({} tokens, F32)", request.n_ctx),
       backend.kv_cache_bytes(request.n_ctx)},
      {fmt::format("compute scratch (batches of {})", request.batch),
       Transformer::scratch_bytes(backend, model, request.batch, request.n_ctx, request.all_logits,
                                  request.next_expert_predictor_bytes > 0)},
      {"margin (stacks, I/O rings, allocator, per-unit state)", kMarginBytes},
  };
  // Teacher forcing hands back the logits after every token fed, up to a whole context.
  if (request.all_logits)
    plan.lines.insert(plan.lines.end() - 1,
                      {fmt::format("logits of every position ({} tokens, F32)", request.n_ctx),
                       uint64_t(request.n_ctx) * uint64_t(config.n_vocab) * sizeof(float)});
  if (request.next_expert_predictor_bytes > 0)
    plan.lines.insert(plan.lines.end() - 1,
                      {"next-expert predictor (--predictor)", request.next_expert_predictor_bytes});
  if (const uint64_t table =
          policy_table_bytes(request.cache_policy, int(config.n_layer), int(config.n_expert));
      table > 0)
    plan.lines.insert(plan.lines.end() - 1,
                      {fmt::format("arena policy's counts ({})", request.cache_policy), table});
  const auto [fixed, arena_minimum] = plan_arena(model, request.io_alignment, plan);
  if (available && request.budget_bytes > available->bytes) plan.available = available;
  if (request.budget_bytes < plan.minimum_budget_bytes)
    plan.shortfall = Status::errorf(
        "{}: the memory budget {} is {} short: this model needs at least {} ({} resident plus {} "
        "for an expert arena of {} experts per layer)",
        file.name(), format_bytes(request.budget_bytes),
        format_bytes(plan.minimum_budget_bytes - request.budget_bytes),
        format_bytes(plan.minimum_budget_bytes), format_bytes(fixed), format_bytes(arena_minimum),
        config.n_expert_used);
  return plan;
}

std::string MemoryPlan::to_text() const {
  std::string text = fmt::format("{} for a budget of {}{}:\n", title, format_bytes(budget_bytes),
                                 budget_basis.empty() ? "" : " (" + budget_basis + ")");
  auto line = [&](const std::string& what, uint64_t bytes, const std::string& note) {
    text += fmt::format("  {:<54} {:>11}{}\n", what, format_bytes(bytes), note);
  };
  for (const auto& l : lines) line(l.what, l.bytes, "");
  if (arena_slots > 0) {
    // Shares that round to 0 or 100 % without being so would say "none" or "all" wrongly.
    const double percent = 100.0 * double(arena_slots) / double(expert_units);
    const std::string share = arena_slots == expert_units ? "100"
                              : percent < 1               ? "< 1"
                                            : fmt::format("{:.0f}", std::min(percent, 99.0));
    line("expert arena", arena_slot_bytes,
         fmt::format("  ({} % of the experts: {} of {} units)", share, arena_slots, expert_units));
    if (arena_bytes > arena_slot_bytes && arena_slots == expert_units)
      line("left unused (every expert already has a slot)", arena_bytes - arena_slot_bytes, "");
  }
  line("smallest budget that works", minimum_budget_bytes, "");
  if (available)
    text += fmt::format(
        "  note: the budget is more than the {} {}; the plan holds only while that much is free\n",
        format_bytes(available->bytes), available->source);
  return text;
}

}  // namespace strata
