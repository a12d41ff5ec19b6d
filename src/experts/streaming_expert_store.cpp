#include "experts/streaming_expert_store.h"

#include <fmt/format.h>

#include <chrono>

#include "base/check.h"

namespace strata {

Result<std::unique_ptr<StreamingExpertStore>> StreamingExpertStore::create(
    ExpertLayout layout, int n_expert_used, std::shared_ptr<FileReader> reader,
    const StreamingStoreOptions& options, const SlotMemoryMaker& make_memory) {
  auto store = std::unique_ptr<StreamingExpertStore>(new StreamingExpertStore());
  STRATA_ASSIGN_OR_RETURN(store->arena_,
                          ExpertArena::create(layout, options.arena_bytes, reader->alignment(),
                                              n_expert_used, make_memory));
  STRATA_ASSIGN_OR_RETURN(store->engine_, IoEngine::create(reader, options.io_threads,
                                                           options.backend, options.io_depth));
  for (const ExpertArena::SizeClass& size_class : store->arena_->classes()) {
    store->slots_.emplace_back(size_t(size_class.n_slots));
    std::vector<int> free;
    for (int i = size_class.n_slots - 1; i >= 0; --i) free.push_back(i);
    store->free_slots_.push_back(std::move(free));
    store->settling_slots_.emplace_back();
    store->evicted_.push_back(false);
    STRATA_ASSIGN_OR_RETURN(
        auto policy, make_policy(options.policy,
                                 {size_t(size_class.n_slots), layout.n_layer(), layout.n_expert}));
    store->policies_.push_back(std::move(policy));
  }
  store->slot_of_unit_.assign(size_t(layout.n_layer()) * size_t(layout.n_expert), -1);
  store->speculations_.resize(size_t(layout.n_layer()));
  store->layout_ = std::move(layout);
  store->n_expert_used_ = n_expert_used;
  store->reads_in_compute_order_ = options.reads_in_compute_order;
  store->add_tier_counters_ = options.add_tier_counters;
  store->misses_on_host_ = options.misses_on_host;
  if (store->misses_on_host_.enabled())
    for (const LayerExpertLayout& l : store->layout_.layers)
      if (l.gate.resident.empty() || l.up.resident.empty() || l.down.resident.empty())
        return Status::error(
            "misses computed on the host need every expert in host memory (the host tier)");
  store->reader_ = std::move(reader);
  return store;
}

StreamingExpertStore::~StreamingExpertStore() {
  // Reads in flight write into the arena: stop the engine before the arena goes.
  engine_.reset();
}

void StreamingExpertStore::submit_read(int layer, int32_t expert, int size_class, int index,
                                       int priority) {
  const auto reads = arena_->reads_for(layer, expert, index, reader_->size());
  Slot& s = slot(size_class, index);
  s.ticket = engine_->submit(reads.ranges(), priority);
  s.reading = true;
  s.claimed_since_read = false;
  s.error = Status();
}

void StreamingExpertStore::collect(int size_class, int index, bool block) {
  Slot& s = slot(size_class, index);
  if (!s.reading || (!block && !engine_->finished(s.ticket))) return;
  if (before_blocking_ && !engine_->finished(s.ticket)) before_blocking_();
  const auto start = std::chrono::steady_clock::now();
  Status status = engine_->wait(s.ticket);
  if (block)
    stats_.host_wait_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  s.reading = false;
  if (s.unit >= 0 && !status.ok())
    s.error = status.with_prefix(
        fmt::format("layer {} expert {}", s.unit / layout_.n_expert, s.unit % layout_.n_expert));
}

void StreamingExpertStore::clear_slot(int size_class, int index) {
  Slot& s = slot(size_class, index);
  // A read that has started cannot be stopped; the slot stays busy until it ends (take_slot
  // waits for it), which costs time, not correctness.
  if (s.reading && engine_->cancel(s.ticket)) s.reading = false;
  s.unit = -1;
  s.speculative = false;
  s.pinned = false;
  s.error = Status();
}

void StreamingExpertStore::free_slot(int size_class, int index) {
  clear_slot(size_class, index);
  free_slots_[size_t(size_class)].push_back(index);
}

void StreamingExpertStore::settle_slot(int size_class, int index) {
  clear_slot(size_class, index);
  settling_slots_[size_t(size_class)].push_back(index);
}

int StreamingExpertStore::take_slot(int size_class, bool for_prefetch) {
  auto& free = free_slots_[size_t(size_class)];
  if (!free.empty()) {
    // A free slot whose dropped read is still running would make us wait for bytes nobody
    // needs: take the most recently freed idle one, and wait only if every free slot is busy.
    auto pick = free.end() - 1;
    for (auto it = free.rbegin(); it != free.rend(); ++it) {
      Slot& s = slot(size_class, *it);
      if (!s.reading || engine_->finished(s.ticket)) {
        pick = std::prev(it.base());
        break;
      }
    }
    const int index = *pick;
    free.erase(pick);
    collect(size_class, index, /*block=*/true);
    return index;
  }
  auto& slots = slots_[size_t(size_class)];
  if (!for_prefetch) {
    // Demand beats speculation: drop the least confident prediction (ties: the larger unit
    // id, so that the choice does not depend on where I/O timing put the units).
    int chosen = -1;
    for (int i = 0; i < int(slots.size()); ++i) {
      const Slot& s = slots[size_t(i)];
      if (!s.speculative || s.pinned) continue;
      if (chosen < 0 || s.prefetch_rank > slots[size_t(chosen)].prefetch_rank ||
          (s.prefetch_rank == slots[size_t(chosen)].prefetch_rank &&
           s.unit > slots[size_t(chosen)].unit))
        chosen = i;
    }
    if (chosen >= 0) {
      slot_of_unit_[size_t(slots[size_t(chosen)].unit)] = -1;
      ++stats_.readaheads_wasted;
      free_slot(size_class, chosen);
      return take_slot(size_class, for_prefetch);
    }
  }
  const auto victim = policies_[size_t(size_class)]->victim([&](uint32_t unit) {
    const int index = slot_of_unit_[unit];
    return index >= 0 && !slots[size_t(index)].pinned;
  });
  if (!victim) {
    auto& settling = settling_slots_[size_t(size_class)];
    if (for_prefetch || settling.empty()) return -1;
    free.push_back(settling.back());  // waits for its read: demand must have a slot
    settling.pop_back();
    return take_slot(size_class, for_prefetch);
  }
  const int index = slot_of_unit_[*victim];
  evicted_[size_t(size_class)] = true;
  policies_[size_t(size_class)]->on_remove(*victim);
  slot_of_unit_[*victim] = -1;
  free_slot(size_class, index);
  return take_slot(size_class, for_prefetch);
}

void StreamingExpertStore::begin_layer(int layer, std::span<const int32_t> experts, bool prefill) {
  if (current_layer_ >= 0) end_layer(current_layer_);  // a forward pass that failed midway
  current_layer_ = layer;
  current_prefill_ = prefill;
  needs_.clear();
  for (size_t c = 0; c < settling_slots_.size(); ++c) {
    free_slots_[c].insert(free_slots_[c].end(), settling_slots_[c].begin(),
                          settling_slots_[c].end());
    settling_slots_[c].clear();
  }
  // Every policy keeps the layer clock, whichever size class the layer's units are in.
  for (auto& each : policies_) each->on_layer(layer, prefill);
  const int c = arena_->class_of_layer(layer);
  ReplacementPolicy& policy = *policies_[size_t(c)];
  const uint64_t unit_bytes = layout_.layers[size_t(layer)].unit_bytes();
  // Units already here are pinned first, so that no miss below can evict them.
  for (int32_t expert : experts) {
    const int32_t unit = unit_id(layer, expert);
    Need need{expert};
    const int index = slot_of_unit_[size_t(unit)];
    if (index < 0 || slot(c, index).speculative) stats_.missed_bytes += unit_bytes;
    if (index >= 0) {
      Slot& s = slot(c, index);
      if (s.speculative) {
        s.speculative = false;
        policy.on_insert(uint32_t(unit), prefill);
        collect(c, index, /*block=*/false);
        if (s.reading) {
          ++stats_.late_readaheads;
          engine_->expedite(s.ticket, 0);
        } else {
          ++stats_.readahead_hits;
        }
      } else {
        ++stats_.hits;
        policy.on_access(uint32_t(unit));
      }
      s.pinned = true;
      need.slot = index;
    } else {
      ++stats_.misses;
    }
    needs_.push_back(need);
  }
  // Predictions this layer did not use are dropped, finished or not, once the arena is full
  // enough to evict; before that they stay, as units the conversation has not used yet (a
  // 100 % arena of the 30B-A3B shape read 24 MB a token again, dropping them).
  for (int32_t expert : speculations_[size_t(layer)]) {
    const int32_t unit = unit_id(layer, expert);
    const int index = slot_of_unit_[size_t(unit)];
    if (index < 0 || !slot(c, index).speculative) continue;
    if (!evicted_[size_t(c)]) {
      slot(c, index).speculative = false;
      policy.on_insert(uint32_t(unit), /*prefill=*/true);
      continue;
    }
    slot_of_unit_[size_t(unit)] = -1;
    ++stats_.readaheads_wasted;
    settle_slot(c, index);
  }
  speculations_[size_t(layer)].clear();
  if (!prefill && misses_on_host_.enabled()) leave_misses_on_host(layer);
  assign_waiting_needs();
}

void StreamingExpertStore::leave_misses_on_host(int layer) {
  const int c = arena_->class_of_layer(layer);
  const uint64_t unit_bytes = layout_.layers[size_t(layer)].unit_bytes();
  int misses = 0;
  uint64_t copying = 0;
  for (const Need& need : needs_) {
    if (need.slot < 0)
      ++misses;
    else if (slot(c, need.slot).reading)
      copying += unit_bytes;
  }
  int on_host = misses_on_host_.count(misses, unit_bytes, copying);
  for (auto need = needs_.rbegin(); need != needs_.rend() && on_host > 0; ++need) {
    if (need->slot >= 0) continue;
    need->on_host = need->claimed = true;
    ++stats_.misses_on_host;
    --on_host;
  }
}

void StreamingExpertStore::assign_waiting_needs() {
  const int c = arena_->class_of_layer(current_layer_);
  for (Need& need : needs_) {
    if (need.slot >= 0 || need.on_host) continue;
    const int index = take_slot(c, /*for_prefetch=*/false);
    if (index < 0) return;  // every slot pinned: waits for release()
    const int32_t unit = unit_id(current_layer_, need.expert);
    Slot& s = slot(c, index);
    s.unit = unit;
    s.pinned = true;
    slot_of_unit_[size_t(unit)] = index;
    policies_[size_t(c)]->on_insert(uint32_t(unit), current_prefill_);
    submit_read(current_layer_, need.expert, c, index, /*priority=*/0);
    need.slot = index;
  }
}

uint64_t StreamingExpertStore::prefetch(int layer, std::span<const int32_t> predicted,
                                        uint64_t max_bytes) {
  const int c = arena_->class_of_layer(layer);
  const uint64_t unit_bytes = layout_.layers[size_t(layer)].unit_bytes();
  uint64_t started = 0;
  bool over_budget = false;  // later predictions start no read, but re-predictions still count
  // Every prediction for a nearer layer reads before any for a farther one.
  const int distance = std::max(layer - current_layer_, 1);
  int rank = (distance - 1) * layout_.n_expert;
  for (int32_t expert : predicted) {
    ++rank;
    const int32_t unit = unit_id(layer, expert);
    if (const int index = slot_of_unit_[size_t(unit)]; index >= 0) {
      // Predicted again from a nearer layer: its read moves up to the new rank.
      Slot& s = slot(c, index);
      if (s.speculative && rank < s.prefetch_rank) {
        s.prefetch_rank = rank;
        if (s.reading) engine_->expedite(s.ticket, rank);
      }
      continue;
    }
    over_budget = over_budget || started + unit_bytes > max_bytes;
    if (over_budget) continue;
    const int index = take_slot(c, /*for_prefetch=*/true);
    if (index < 0) break;
    Slot& s = slot(c, index);
    s.unit = unit;
    s.speculative = true;
    s.prefetch_rank = rank;
    slot_of_unit_[size_t(unit)] = index;
    submit_read(layer, expert, c, index, rank);
    speculations_[size_t(layer)].push_back(expert);
    ++stats_.readaheads_issued;
    started += unit_bytes;
  }
  return started;
}

Result<std::vector<ClaimedExpert>> StreamingExpertStore::claim_next(int layer) {
  STRATA_CHECK_EQ(layer, current_layer_);
  const int c = arena_->class_of_layer(layer);
  // When the layer needs more units than the arena holds, units are claimed strictly in
  // order, so that which ones are evicted for the rest does not depend on I/O timing.
  bool waves = false;
  for (const Need& need : needs_) waves = waves || (need.slot < 0 && !need.on_host);
  // In waves, the first unclaimed need with a slot is next: a need that waits for a slot may
  // come before units that were resident when the layer began and hold theirs.
  std::vector<Need*> ready;
  Need* first = nullptr;
  bool unclaimed = false;
  for (Need& need : needs_) {
    if (need.claimed) continue;
    unclaimed = true;
    if (need.slot < 0) continue;
    if (!first) first = &need;
    if (waves) break;
    collect(c, need.slot, /*block=*/false);
    if (!slot(c, need.slot).reading) ready.push_back(&need);
  }
  if (!unclaimed) return std::vector<ClaimedExpert>();
  STRATA_CHECK(first != nullptr);  // the model releases what it claimed before claiming more
  if (ready.empty()) {
    collect(c, first->slot, /*block=*/true);
    ready.push_back(first);
  }
  std::vector<ClaimedExpert> claimed;
  for (Need* need : ready) {
    Slot& s = slot(c, need->slot);
    if (!s.error.ok()) {
      // Reported once; the unit leaves the arena so that a later attempt reads it again.
      const Status error = s.error;
      const int32_t unit = s.unit;
      policies_[size_t(c)]->on_remove(uint32_t(unit));
      slot_of_unit_[size_t(unit)] = -1;
      free_slot(c, need->slot);
      need->slot = -1;
      need->claimed = true;
      return error;
    }
    need->claimed = true;
    STRATA_RETURN_IF_ERROR(
        arena_->memory()
            .claimed(c, need->slot)
            .with_prefix(fmt::format("layer {} expert {}", layer, need->expert)));
    ExpertUnit unit = arena_->unit_in_slot(layer, need->expert, need->slot);
    unit.fresh_from_file = !s.claimed_since_read && !reads_in_compute_order_;
    s.claimed_since_read = true;
    claimed.push_back({need->expert, unit});
  }
  return claimed;
}

std::vector<ClaimedExpert> StreamingExpertStore::claim_on_host(int layer) {
  STRATA_CHECK_EQ(layer, current_layer_);
  const LayerExpertLayout& l = layout_.layers[size_t(layer)];
  std::vector<ClaimedExpert> claimed;
  for (const Need& need : needs_)
    if (need.on_host) {
      const size_t e = size_t(need.expert);
      claimed.push_back({need.expert, {l.gate.resident[e], l.up.resident[e], l.down.resident[e]}});
    }
  return claimed;
}

void StreamingExpertStore::release(int layer, std::span<const ClaimedExpert> experts) {
  STRATA_CHECK_EQ(layer, current_layer_);
  const int c = arena_->class_of_layer(layer);
  released_slots_.clear();
  for (const ClaimedExpert& claimed : experts) {
    const int index = slot_of_unit_[size_t(unit_id(layer, claimed.expert))];
    STRATA_CHECK(index >= 0);
    slot(c, index).pinned = false;
    released_slots_.push_back(index);
  }
  arena_->memory().released(c, released_slots_);
  assign_waiting_needs();
}

void StreamingExpertStore::end_layer(int layer) {
  STRATA_CHECK_EQ(layer, current_layer_);
  const int c = arena_->class_of_layer(layer);
  released_slots_.clear();
  for (const Need& need : needs_) {
    if (need.slot < 0) continue;
    // A pass that failed midway may not have released what it claimed: still pinned.
    Slot& s = slot(c, need.slot);
    if (need.claimed && s.pinned) released_slots_.push_back(need.slot);
    s.pinned = false;
  }
  if (!released_slots_.empty()) arena_->memory().released(c, released_slots_);
  needs_.clear();
  current_layer_ = -1;
}

void StreamingExpertStore::expect_next_visit(int layer, std::span<const float> scores) {
  for (auto& each : policies_) each->on_next_visit_scores(layer, scores);
}

bool StreamingExpertStore::is_resident(int layer, int32_t expert) const {
  const int index = slot_of_unit_[size_t(unit_id(layer, expert))];
  if (index < 0) return false;
  return !slots_[size_t(arena_->class_of_layer(layer))][size_t(index)].speculative;
}

ExpertCounters StreamingExpertStore::stats() const {
  ExpertCounters stats = stats_;
  const IoEngineStats io = engine_->stats();
  stats.bytes_read = io.bytes_read;
  stats.disk_active_ms = io.active_seconds * 1000;
  if (add_tier_counters_) add_tier_counters_(stats);
  return stats;
}

Status StreamingExpertStore::preload(std::span<const std::pair<int, int32_t>> units) {
  std::vector<std::pair<int, int>> loading;  // class, slot
  for (const auto& [layer, expert] : units) {
    const int c = arena_->class_of_layer(layer);
    const int32_t unit = unit_id(layer, expert);
    if (slot_of_unit_[size_t(unit)] >= 0 || free_slots_[size_t(c)].empty()) continue;
    const int index = take_slot(c, /*for_prefetch=*/true);
    Slot& s = slot(c, index);
    s.unit = unit;
    slot_of_unit_[size_t(unit)] = index;
    policies_[size_t(c)]->on_insert(uint32_t(unit), false);
    submit_read(layer, expert, c, index, 0);
    loading.push_back({c, index});
  }
  for (const auto& [c, index] : loading) {
    collect(c, index, /*block=*/true);
    if (!slot(c, index).error.ok()) return slot(c, index).error;
  }
  return Status();
}

}  // namespace strata
