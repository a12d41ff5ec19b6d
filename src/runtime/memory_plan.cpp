#include "runtime/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "base/kernel_stat_file.h"
#include "experts/expert_arena.h"
#include "model/tensor_data.h"
#include "model/transformer.h"
#include "runtime/byte_size.h"
#include "runtime/cgroup_memory.h"

namespace strata {
namespace {

// Allocator fragmentation and the small structures no line lists (thread stacks, I/O
// bookkeeping): 32 MiB plus 2 % of the budget.
uint64_t margin_bytes(uint64_t budget) { return (32ull << 20) + budget / 50; }

}  // namespace

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

MemoryPlan plan_memory(const Model& model, const Backend& backend,
                       const MemoryPlanRequest& request) {
  const ModelConfig& config = model.config();
  const gguf::GgufFile& file = model.file();
  MemoryPlan plan;
  plan.budget_bytes = request.budget_bytes;
  plan.budget_basis = request.budget_basis;
  uint64_t dense_pieces = 0;
  for (const auto& tensor : file.tensors()) dense_pieces += !is_routed_expert_tensor(tensor);
  plan.lines = {
      {"runtime, metadata and tokenizer (measured)", current_rss_bytes()},
      {"dense weights", dense_tensor_bytes(file) + dense_pieces * 2 * request.io_alignment},
      {fmt::format("KV cache ({} tokens, F32)", request.n_ctx),
       backend.kv_cache_bytes(request.n_ctx)},
      {fmt::format("compute scratch (batches of {})", request.batch),
       Transformer::scratch_bytes(backend, config, request.batch, request.n_ctx,
                                  request.all_logits)},
      {"margin (allocator, stacks, I/O bookkeeping)", margin_bytes(request.budget_bytes)},
  };
  if (request.next_expert_predictor_bytes > 0)
    plan.lines.insert(plan.lines.end() - 1,
                      {"next-expert predictor (--predictor)", request.next_expert_predictor_bytes});
  uint64_t fixed = 0;
  for (const auto& line : plan.lines) fixed += line.bytes;
  const uint64_t arena_minimum = ExpertArena::minimum_bytes(
      model.weights().experts, request.io_alignment, int(config.n_expert_used));
  plan.minimum_budget_bytes = fixed + arena_minimum;
  plan.arena_bytes = request.budget_bytes > fixed ? request.budget_bytes - fixed : 0;
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
  std::string text = fmt::format("memory plan for a budget of {}{}:\n", format_bytes(budget_bytes),
                                 budget_basis.empty() ? "" : " (" + budget_basis + ")");
  for (const auto& line : lines)
    text += fmt::format("  {:<46} {:>12}\n", line.what, format_bytes(line.bytes));
  if (arena_bytes > 0)
    text += fmt::format("  {:<46} {:>12}\n", "expert arena", format_bytes(arena_bytes));
  text += fmt::format("  {:<46} {:>12}\n", "smallest budget that works",
                      format_bytes(minimum_budget_bytes));
  return text;
}

}  // namespace strata
