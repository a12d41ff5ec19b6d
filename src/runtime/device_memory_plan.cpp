#include "runtime/device_memory_plan.h"

#include <fmt/format.h>

#include "experts/expert_arena.h"
#include "model/tensor_data.h"
#include "model/transformer.h"
#include "runtime/byte_size.h"

namespace strata {
namespace {

// Each weight's copy is padded to keep its alignment modulo 256 (cuda/weight_placement.h).
constexpr uint64_t kCopyPadding = 256;
// What no line lists: each allocation rounded up by the device's allocator, the expert arena's
// slots each rounded to 256 bytes, and the conversion buffers' slack.
constexpr uint64_t kMarginBytes = uint64_t(256) << 20;

}  // namespace

MemoryPlan plan_device_memory(const Model& model, const Backend& backend,
                              const DeviceMemoryRequest& request) {
  const ModelConfig& config = model.config();
  const gguf::GgufFile& file = model.file();
  MemoryPlan plan;
  plan.title = "device memory plan";
  plan.budget_bytes = request.budget_bytes;
  plan.budget_basis = request.budget_basis;
  uint64_t dense_tensors = 0;
  for (const gguf::TensorInfo& tensor : file.tensors())
    if (!is_routed_expert_tensor(tensor)) ++dense_tensors;
  plan.lines = {
      {fmt::format("dense weights: {} of tensors, each copy 256-aligned",
                   format_bytes(dense_tensor_bytes(file))),
       dense_tensor_bytes(file) + dense_tensors * kCopyPadding},
      {fmt::format("KV cache ({} tokens, F32)", request.n_ctx),
       backend.kv_cache_bytes(request.n_ctx)},
      {fmt::format("compute scratch (batches of {})", request.batch),
       Transformer::scratch_bytes(backend, model, request.batch, request.n_ctx, request.all_logits,
                                  request.next_expert_predictor)},
      {"margin (allocator rounding, slots rounded to 256 B)", kMarginBytes},
  };
  const auto [fixed, arena_minimum] = plan_arena(model, request.alignment, plan);
  if (request.budget_bytes < plan.minimum_budget_bytes)
    plan.shortfall = Status::errorf(
        "{}: the device memory budget {} is {} short: this model needs at least {} ({} for "
        "dense weights, KV cache and scratch plus {} for an expert arena of {} experts per "
        "layer)",
        file.name(), format_bytes(request.budget_bytes),
        format_bytes(plan.minimum_budget_bytes - request.budget_bytes),
        format_bytes(plan.minimum_budget_bytes), format_bytes(fixed), format_bytes(arena_minimum),
        config.n_expert_used);
  return plan;
}

}  // namespace strata
