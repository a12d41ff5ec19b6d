// The keys and values of one sequence, in the memory of the backend that made it
// (Backend::make_kv_cache) and laid out as its attention reads them. A session owns one.
#pragma once

#include <cstdint>

namespace strata {

class KvCache {
 public:
  virtual ~KvCache() = default;
  // Positions it holds.
  virtual int64_t n_ctx() const = 0;
};

}  // namespace strata
