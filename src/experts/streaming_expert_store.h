// The streaming expert store (DESIGN.md §3): routed experts live in the model file and are
// read on demand into a bounded arena of slots, with read-ahead of predicted experts and a
// pluggable replacement policy.
//
// Life of a unit (layer, expert):
//   absent -> speculative (prefetch() started a read; not resident for routing purposes)
//          -> resident (begin_layer() needed it: claimed from speculation, or read on demand)
//          -> absent (evicted by the policy, or a speculation dropped unused)
// (A speculation its layer did not use stays, as a resident unit, while its size class has
// never had to evict: the arena then has room, and dropping it would only mean reading it
// again the next time it is predicted.)
// Residency as routing sees it (is_resident) and the policy's state change only in
// begin_layer() and prefetch(), in argument order, so they are a function of the routes
// alone, never of I/O timing. A speculation its layer did not use is dropped at that layer's
// begin_layer() whether or not its read finished (if the read is still running, the slot
// stays busy until it ends, which only costs time).
//
// Reads land as the file has them, and the store never changes a slot's bytes: the first claim
// after a read marks the unit fresh_from_file, and the backend's products put the slices the
// layout marks grouped_after_read() or ungrouped_after_read() in the order this CPU computes
// (Matrix::rearrange_before_use): on the compute threads, which then read them from their
// cache; read-aheads dropped unused cost no rearranging.
//
// Thread-safety: one compute thread calls everything; reads run on the I/O engine's threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "experts/expert_arena.h"
#include "experts/expert_store.h"
#include "experts/io_engine.h"
#include "experts/misses_on_host.h"
#include "experts/replacement_policy.h"

namespace strata {

struct StreamingStoreOptions {
  uint64_t arena_bytes = 0;
  std::string policy = "successor";
  int io_threads = 2;
  IoBackend backend = IoBackend::kAuto;
  int io_depth = 0;  // requests io_uring keeps running at once (IoEngine::create's uring_depth)
  // The reader hands out the slices in the row order the backend computes with already (a
  // host tier, host_tier_reader.h), so no claim asks for them to be rearranged.
  bool reads_in_compute_order = false;
  // Adds the counters of the tier the reader serves from (a host arena's) to stats().
  std::function<void(ExpertCounters&)> add_tier_counters;
  // Decode misses left in host memory for the host's CPU (claim_on_host). REQUIRES, when
  // enabled: every slice of the layout is resident in host memory (the host tier).
  MissesOnHost misses_on_host;
};

class StreamingExpertStore final : public ExpertStore {
 public:
  // The arena needs at least n_expert_used slots per size class (one token's experts of a
  // layer at once); `reader` reads the model file (O_DIRECT where possible); `make_memory`
  // makes the arena's slots where the backend computes with them.
  static Result<std::unique_ptr<StreamingExpertStore>> create(ExpertLayout layout,
                                                              int n_expert_used,
                                                              std::shared_ptr<FileReader> reader,
                                                              const StreamingStoreOptions& options,
                                                              const SlotMemoryMaker& make_memory);
  ~StreamingExpertStore() override;

  const ExpertLayout& layout() const override { return layout_; }
  void begin_layer(int layer, std::span<const int32_t> experts, bool prefill) override;
  uint64_t prefetch(int layer, std::span<const int32_t> predicted, uint64_t max_bytes) override;
  Result<std::vector<ClaimedExpert>> claim_next(int layer) override;
  std::vector<ClaimedExpert> claim_on_host(int layer) override;
  void release(int layer, std::span<const ClaimedExpert> experts) override;
  void end_layer(int layer) override;
  void expect_next_visit(int layer, std::span<const float> scores) override;
  bool is_resident(int layer, int32_t expert) const override;
  ExpertCounters stats() const override;
  void set_before_blocking(std::function<void()> hook) override {
    before_blocking_ = std::move(hook);
  }

  const ExpertArena& arena() const { return *arena_; }
  IoBackend io_backend() const { return engine_->backend(); }
  bool reading() const override { return engine_->reading(); }
  // Makes (layer, expert) resident now, in order (warm start); stops when the arena is full.
  Status preload(std::span<const std::pair<int, int32_t>> units);

 private:
  struct Slot {
    int32_t unit = -1;                // layer * n_expert + expert; -1 when free
    bool speculative = false;         // loaded by prefetch, not yet needed
    bool pinned = false;              // needed by the current layer, not yet released
    bool reading = false;             // a read was submitted and not yet collected
    bool claimed_since_read = false;  // its slices are in the order the kernels read
    IoEngine::Ticket ticket = 0;
    int prefetch_rank = 0;
    Status error;  // a failed read, reported when the unit is claimed
  };
  struct Need {
    int32_t expert;
    int slot = -1;  // -1: waiting for a slot (the layer needs more than the arena holds)
    bool claimed = false;
    bool on_host = false;  // computed where it lies in host memory: no slot, no copy
  };

  StreamingExpertStore() = default;
  int32_t unit_id(int layer, int32_t expert) const { return layer * layout_.n_expert + expert; }
  Slot& slot(int size_class, int index) { return slots_[size_t(size_class)][size_t(index)]; }
  // A slot of `size_class` for a new unit: a free one, else an unused speculation, else the
  // policy's victim among unpinned resident units, else (on demand only) a settling slot.
  // -1 if every slot is pinned.
  int take_slot(int size_class, bool for_prefetch);
  void free_slot(int size_class, int index);
  // Frees the slot of a dropped prediction into settling_slots_ (see there).
  void settle_slot(int size_class, int index);
  // Empties the slot's record; its read, if queued, is cancelled.
  void clear_slot(int size_class, int index);
  void submit_read(int layer, int32_t expert, int size_class, int index, int priority);
  // Collects a finished (or, when `block`, any) read of a slot.
  void collect(int size_class, int index, bool block);
  void assign_waiting_needs();
  // Marks the last misses_on_host_.count(...) misses of a decode layer's needs on_host.
  void leave_misses_on_host(int layer);

  ExpertLayout layout_;
  std::function<void()> before_blocking_;
  int n_expert_used_ = 0;
  bool reads_in_compute_order_ = false;
  std::function<void(ExpertCounters&)> add_tier_counters_;
  MissesOnHost misses_on_host_;
  std::shared_ptr<FileReader> reader_;
  std::unique_ptr<IoEngine> engine_;
  std::unique_ptr<ExpertArena> arena_;
  std::vector<std::vector<Slot>> slots_;      // [class][slot]
  std::vector<std::vector<int>> free_slots_;  // [class]
  // [class]: slots of predictions dropped unused at a begin_layer(). A read that has started
  // cannot be stopped, and taking its slot would mean waiting for bytes nobody needs (30B-A3B at
  // 25 %: ~30 ms a token), so these slots become free at the next begin_layer(), a point that
  // does not depend on I/O timing, by when their reads have mostly ended.
  std::vector<std::vector<int>> settling_slots_;
  std::vector<bool> evicted_;  // [class]: the policy has chosen a victim at least once
  std::vector<std::unique_ptr<ReplacementPolicy>> policies_;  // [class]
  std::vector<int32_t> slot_of_unit_;                         // -1: not in the arena
  std::vector<std::vector<int32_t>> speculations_;            // [layer]: experts prefetched

  int current_layer_ = -1;
  bool current_prefill_ = false;
  std::vector<Need> needs_;
  std::vector<int> released_slots_;  // release()'s and end_layer()'s, for the slot memory
  ExpertCounters stats_;
};

}  // namespace strata
