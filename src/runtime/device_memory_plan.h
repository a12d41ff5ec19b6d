// The plan of a backend's own memory (a GPU's) under `--gpu-mem`: the dense weights, the KV
// cache and the scratch stay there, and an expert arena takes what they leave; the experts come
// from a host tier holding all of them. Printed line by line like the host's memory plan; a
// budget below what one token needs is refused before anything is allocated on the device.
#pragma once

#include "runtime/memory_plan.h"

namespace strata {

struct DeviceMemoryRequest {
  uint64_t budget_bytes = 0;
  std::string budget_basis;
  int64_t n_ctx = 0;
  int64_t batch = 0;
  bool all_logits = false;
  bool next_expert_predictor = false;
  // The arena's alignment: the host tier's reads' (HostTierReader::kAlignment).
  size_t alignment = 256;
};

// REQUIRES: `model` is described (shapes only suffice).
MemoryPlan plan_device_memory(const Model& model, const Backend& backend,
                              const DeviceMemoryRequest& request);

}  // namespace strata
