// An ordered set of expert units kept as an intrusive doubly-linked list from the cold end (the
// next to go) to the hot end, with O(1) insertion at either end, removal and membership. The
// links live in arrays indexed by unit id, so the order never depends on hashing or addresses:
// units are dense (layer * n_expert + expert), a few thousand to ~10^4.
//
// Thread-compatibility: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "base/check.h"

namespace strata {

class UnitList {
 public:
  // A bound on unit ids, so that a corrupt id fails a CHECK instead of allocating gigabytes.
  static constexpr uint32_t kMaxUnits = 1u << 24;

  bool contains(uint32_t unit) const { return unit < nodes_.size() && nodes_[unit].member; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // REQUIRES: !contains(unit)
  void push_hot(uint32_t unit) { link(unit, hot_, kNone); }
  void push_cold(uint32_t unit) { link(unit, kNone, cold_); }

  // REQUIRES: contains(unit)
  void remove(uint32_t unit) {
    STRATA_CHECK(contains(unit));
    Node& node = nodes_[unit];
    (node.colder == kNone ? cold_ : nodes_[node.colder].hotter) = node.hotter;
    (node.hotter == kNone ? hot_ : nodes_[node.hotter].colder) = node.colder;
    node = Node();
    --size_;
  }

  // REQUIRES: !empty()
  uint32_t coldest() const {
    STRATA_CHECK(!empty());
    return cold_;
  }

  // The coldest unit for which `accept` is true. Cost: one step per unit passed over.
  std::optional<uint32_t> coldest_where(const std::function<bool(uint32_t)>& accept) const {
    for (uint32_t unit = cold_; unit != kNone; unit = nodes_[unit].hotter)
      if (accept(unit)) return unit;
    return std::nullopt;
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Node {
    uint32_t colder = kNone;
    uint32_t hotter = kNone;
    bool member = false;
  };

  // Links `unit` between `colder` and `hotter`, which are adjacent (or kNone at an end).
  void link(uint32_t unit, uint32_t colder, uint32_t hotter) {
    STRATA_CHECK_LT(unit, kMaxUnits);
    if (unit >= nodes_.size()) nodes_.resize(size_t(unit) + 1);
    STRATA_CHECK(!nodes_[unit].member);
    nodes_[unit] = Node{colder, hotter, true};
    (colder == kNone ? cold_ : nodes_[colder].hotter) = unit;
    (hotter == kNone ? hot_ : nodes_[hotter].colder) = unit;
    ++size_;
  }

  std::vector<Node> nodes_;
  uint32_t cold_ = kNone;
  uint32_t hot_ = kNone;
  size_t size_ = 0;
};

}  // namespace strata
