// The seam between the model's MoE math and wherever expert weights live (DESIGN.md §3).
//
// Per MoE layer the model:
//   1. begin_layer(layer, experts, prefill): the experts its router picked (for a batch of
//      tokens, their union), in a deterministic order;
//   2. prefetch(layer + d, predicted, max_bytes) for d = 1, 2, ...: optionally, what it expects
//      the next layers to pick, best first (read-ahead; a wrong guess costs bandwidth, never
//      correctness), and how many bytes of new reads it may start. Nearer layers first: their
//      reads are queued ahead of farther ones';
//   3. claim_on_host(layer) once (experts the host computes from host memory, if any), and
//      claim_next(layer) until it returns no experts: each call hands out the experts whose
//      weights are resident now (so they are computed while the rest load), or blocks for the
//      next one to arrive; release() the ones computed so their slots can be reused;
//   4. end_layer(layer).
// Failed reads surface from claim_next(), naming the file, layer, expert and offset.
//
// Determinism: everything that later decisions depend on (which units are resident, the
// replacement policy's state, statistics other than timing) changes only inside begin_layer
// and prefetch, in the order of their arguments; I/O timing only decides how claims are
// grouped, which does not change any number the model computes.
//
// Thread-safety: called from the session's compute thread only.
#pragma once

#include <strata/expert_counters.h>
#include <strata/status.h>

#include <functional>
#include <span>
#include <vector>

#include "experts/expert_layout.h"

namespace strata {

struct ClaimedExpert {
  int32_t expert;
  ExpertUnit unit;  // valid until released
};

class ExpertStore {
 public:
  virtual ~ExpertStore() = default;

  virtual const ExpertLayout& layout() const = 0;
  // `prefill`: the batch is part of a prompt; units it streams in should not push out the
  // ones the conversation keeps using.
  virtual void begin_layer(int layer, std::span<const int32_t> experts, bool prefill) = 0;
  // Starts reads for the predicted units that are not here, in the given order, while their
  // bytes fit in `max_bytes`: from the first that does not, it starts none. Returns the bytes
  // it started.
  virtual uint64_t prefetch(int layer, std::span<const int32_t> predicted, uint64_t max_bytes) = 0;
  virtual Result<std::vector<ClaimedExpert>> claim_next(int layer) = 0;
  // After begin_layer: the layer's experts left where they lie in host memory for the host's CPU
  // to compute (an arena in a device's memory, --cpu-experts), their slices there. claim_next
  // does not hand them out and they are not released; they stay as they were (not resident).
  virtual std::vector<ClaimedExpert> claim_on_host(int layer) {
    (void)layer;
    return {};
  }
  virtual void release(int layer, std::span<const ClaimedExpert> experts) = 0;
  virtual void end_layer(int layer) = 0;
  // After end_layer: the next-token predictor's estimates that each expert of the layer is used
  // at the layer's next visits (ReplacementPolicy::on_next_visit_scores), for the replacement
  // policy. Stores without one ignore them.
  virtual void expect_next_visit(int layer, std::span<const float> scores) {
    (void)layer;
    (void)scores;
  }

  // Whether a unit is resident for cache-aware routing. Changes only at deterministic points
  // (see above).
  virtual bool is_resident(int layer, int32_t expert) const = 0;
  // Whether every unit is resident at all times (ExpertLayout's `resident` slices), so that a
  // layer may be computed before the store hears of its picks (Backend::routes_in_place):
  // begin_layer() then follows after the forward pass, as claims that never block.
  virtual bool holds_every_expert() const { return false; }
  // Counters since the store was created.
  virtual ExpertCounters stats() const = 0;
  // Runs `hook` on the compute thread each time it is about to block on an expert read, so the
  // caller can make its other threads stop spinning (ThreadPool::rest) while the reads need the
  // cores. A store that never blocks ignores it.
  virtual void set_before_blocking(std::function<void()> hook) { (void)hook; }
  // Whether an expert read is running now (a hint, as IoEngine::reading()); never for stores
  // that do not read.
  virtual bool reading() const { return false; }
};

}  // namespace strata
