// Opening a model for a session: without a memory budget the file is memory-mapped and every
// expert is resident; with one, the memory plan is made and printed, the dense weights are
// read into memory (O_DIRECT) and the experts stream into an arena (DESIGN.md §3).
#pragma once

#include <strata/session.h>
#include <strata/status.h>

#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "experts/expert_store.h"
#include "model/host_experts.h"
#include "model/model.h"
#include "runtime/tokenizer.h"

namespace strata {

struct LoadedSession {
  std::shared_ptr<const Model> model;
  std::optional<runtime::Tokenizer> tokenizer;
  std::unique_ptr<ExpertStore> experts;
  std::string memory_plan;                        // empty without a budget
  std::string store;                              // how experts are kept, for describe()
  std::optional<ExpertReadPattern> read_pattern;  // when experts stream
  // The experts a device's arena leaves to the host's CPU (--cpu-experts), for the transformer.
  std::unique_ptr<HostExperts> host_experts;
};

// REQUIRES: options.n_threads and options.n_ctx resolved (> 0). `backend` is the one the
// session computes on (its KV cache and scratch are in the plan).
Result<LoadedSession> load_session(const SessionOptions& options, Backend& backend);
// The plan load_session() would make, without loading weights.
Result<MemoryPlanSummary> plan_session(const SessionOptions& options, const Backend& backend);

}  // namespace strata
