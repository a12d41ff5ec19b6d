// Drives a ReplacementPolicy the way the arena does, for comparing it step by step with a
// brute-force reference model of the same policy.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "experts/replacement_policy.h"

namespace strata::testing {

// One request: access `unit` (a miss inserts it, as a scan unit if `scan`) while the units in
// `pinned` (a bit mask of units below 32) must stay; or, with `drop`, remove `unit` if it is
// resident.
struct Request {
  uint32_t unit = 0;
  bool scan = false;
  uint32_t pinned = 0;
  bool drop = false;
};

struct Outcome {
  bool hit = false;
  std::optional<uint32_t> victim;  // evicted to make room
  bool inserted = false;           // false on a hit, a drop, or a miss with every unit pinned
  bool operator==(const Outcome&) const = default;
};

// What the arena does with a policy of `capacity` slots; `resident` is indexed by unit.
inline Outcome drive(ReplacementPolicy& policy, std::vector<bool>& resident, size_t capacity,
                     const Request& request) {
  Outcome outcome;
  const uint32_t unit = request.unit;
  if (request.drop) {
    if (resident[unit]) policy.on_remove(unit);
    resident[unit] = false;
    return outcome;
  }
  if (resident[unit]) {
    outcome.hit = true;
    policy.on_access(unit);
    return outcome;
  }
  size_t count = 0;
  for (bool r : resident) count += r;
  if (count == capacity) {
    outcome.victim = policy.victim(
        [&](uint32_t u) { return u != unit && !(u < 32 && (request.pinned >> u & 1)); });
    if (!outcome.victim) return outcome;
    policy.on_remove(*outcome.victim);
    resident[*outcome.victim] = false;
  }
  policy.on_insert(unit, request.scan);
  resident[unit] = true;
  outcome.inserted = true;
  return outcome;
}

// Every sequence of `length` requests over units [0, n_unit), with and without scan when
// `with_scan`; calls `check` with each.
inline void for_each_sequence(uint32_t n_unit, int length, bool with_scan,
                              const std::function<void(const std::vector<Request>&)>& check) {
  const uint32_t symbols = n_unit * (with_scan ? 2 : 1);
  std::vector<uint32_t> digits(static_cast<size_t>(length), 0);
  std::vector<Request> requests(static_cast<size_t>(length));
  while (true) {
    for (int i = 0; i < length; ++i)
      requests[size_t(i)] =
          Request{digits[size_t(i)] % n_unit, digits[size_t(i)] >= n_unit, 0, false};
    check(requests);
    int i = 0;
    while (i < length && ++digits[size_t(i)] == symbols) digits[size_t(i++)] = 0;
    if (i == length) return;
  }
}

// A random mix of accesses (some as scans), pins of random other units, and drops.
inline std::vector<Request> random_requests(uint32_t n_unit, int length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Request> requests;
  for (int i = 0; i < length; ++i) {
    Request request;
    // A skewed choice, so that some units are popular and frequencies matter.
    request.unit = std::min(uint32_t(rng() % n_unit), uint32_t(rng() % n_unit));
    request.scan = rng() % 5 == 0;
    if (rng() % 3 == 0) request.pinned = uint32_t(rng()) & ((1u << n_unit) - 1);
    request.drop = rng() % 17 == 0;
    requests.push_back(request);
  }
  return requests;
}

}  // namespace strata::testing
