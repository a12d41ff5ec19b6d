// The memory plan of a session under a budget (`--mem`): what stays resident, line by line,
// and what is left for the expert arena. Printed at start-up and by `strata inspect --mem`;
// a plan over budget is refused with how much more it needs and what the minimum is.
//
// The first line is measured, not estimated: the process's resident memory once the file's
// metadata is parsed and the tokenizer built (binary, libraries, allocator, vocabulary). The
// others are what the session allocates, to the byte, and a fixed margin for what no line
// lists (memory_plan.cpp says what it covers and how it was measured).
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "model/model.h"

namespace strata {

// The memory this process can still take: the machine's MemAvailable, or less where a cgroup
// limit leaves less (see cgroup_memory.h).
struct AvailableMemory {
  uint64_t bytes = 0;
  std::string source;  // which of the two it is, in words
};
// nullopt where neither can be read.
std::optional<AvailableMemory> available_memory();
// Resident set size of this process now and at its peak (VmRSS, VmHWM).
uint64_t current_rss_bytes();
uint64_t peak_rss_bytes();

// A reader's alignment as the plan and inspect print it: "4 KiB", "512 B".
std::string alignment_text(size_t alignment);

struct MemoryPlanRequest {
  uint64_t budget_bytes = 0;
  std::string budget_basis;  // how the budget was chosen, when not given (--mem auto)
  int64_t n_ctx = 0;
  int64_t batch = 0;        // largest forward batch (prefill chunk)
  bool all_logits = false;  // teacher forcing: the logits of every position come back
  size_t io_alignment = 4096;
  uint64_t next_expert_predictor_bytes = 0;  // 0: none
  std::string cache_policy;                  // the arena's replacement policy (resolved)
};

struct MemoryPlan {
  std::string title = "memory plan";  // what the budget bounds
  struct Line {
    std::string what;
    uint64_t bytes;
  };
  std::vector<Line> lines;  // everything but the arena
  uint64_t budget_bytes = 0;
  std::string budget_basis;
  uint64_t arena_bytes = 0;  // what the budget leaves for the arena (its budget)
  // The arena that budget makes (ExpertArena::plan): its bytes, its slots, and the units of the
  // model's experts (layers x experts). Zero below the minimum.
  uint64_t arena_slot_bytes = 0;
  int64_t arena_slots = 0, expert_units = 0;
  uint64_t minimum_budget_bytes = 0;
  // Set when the budget is above the memory this process can take (available_memory()): the
  // plan then holds only if that memory is freed.
  std::optional<AvailableMemory> available;
  // Set when the budget is below the minimum: one line saying how much more is needed.
  Status shortfall;
  std::string to_text() const;
};

// Fills in the arena's part of a plan whose budget and lines are set: what the lines leave the
// arena, its slots, the smallest budget. Returns the lines' sum and the arena's minimum.
std::pair<uint64_t, uint64_t> plan_arena(const Model& model, size_t alignment, MemoryPlan& plan);

// REQUIRES: `model` is described (shapes only suffice). The backend says what its KV cache and
// scratch take. `available`: the memory the process can take, to compare the budget with
// (nullopt: not known, no comparison).
MemoryPlan plan_memory(const Model& model, const Backend& backend, const MemoryPlanRequest& request,
                       const std::optional<AvailableMemory>& available);

}  // namespace strata
