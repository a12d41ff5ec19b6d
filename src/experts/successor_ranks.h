// Which experts of a layer tend to follow which: counts of "expert e was used at one visit of
// the layer (a token) and expert f at the next", learned online, rank the layer's experts for
// its next visit given the ones its latest visit used. NextUsePolicy ("successor") reads the
// ranks as a feature of a unit's chance to be used at its layer's next visit; its header says
// what they are worth.
//
// Score of f for the next visit: sum over the experts e of the latest visit of
// follows[e][f] / (visits with e + 1). Ranks are by score, ties by expert id, and are bucketed:
// ranks 0..7 one bucket each, then two buckets per octave (8-11, 12-15, 16-23, ...) up to
// kBuckets - 1.
//
// Cost: observe() is O(n_expert * used + n_expert log n_expert); memory n_layer * n_expert^2
// floats (48 x 128 x 128: 3 MiB).
// Thread-compatibility: one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata {

class SuccessorRanks {
 public:
  static constexpr int kBuckets = 16;

  // REQUIRES: n_layer >= 1, n_expert >= 1
  SuccessorRanks(int n_layer, int n_expert);
  // The memory of its tables (the latest visits' experts aside: a few per layer).
  static uint64_t bytes_for(int n_layer, int n_expert);

  // The experts a visit of `layer` used. `follows_previous`: the previous call for this layer
  // was the visit just before (else the pair is not counted).
  void observe(int layer, std::span<const int32_t> used, bool follows_previous);
  // Forgets the ranks of `layer` (its next visit does not follow the latest observed one).
  void invalidate(int layer);
  // The rank bucket of `expert` for the next visit of `layer`; -1 if unknown.
  int bucket(int layer, int expert) const;

 private:
  int n_layer_, n_expert_;
  std::vector<float> follows_;                  // [layer][e][f]
  std::vector<float> visits_with_;              // [layer][e]
  std::vector<std::vector<int32_t>> previous_;  // [layer]: the latest visit's experts
  std::vector<int8_t> buckets_;                 // [layer][expert]; -1: unknown
};

}  // namespace strata
