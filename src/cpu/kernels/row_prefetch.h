// Software prefetch for decode's rows kernels (block32_avx2.h, block32_avx512.h). Include only
// from *_avx2.cpp and *_avx512.cpp files.
//
// A call's rows are contiguous, and its groups of rows are read side by side (row r of a group
// at block b while row r + 1 is at block b too). Each kernel iteration therefore prefetches the
// bytes past the current group linearly, at the pace the group is read, starting
// kPrefetchPastRowGroup beyond its end: when the next group starts, all of it has been
// requested. (A fixed distance ahead of each row, the first scheme, covered the next group of
// 1 KiB+ rows only partly: +5-9 % in an interleaved A/B on 2048-weight Q4_0 rows.) Into L2:
// into L1 (T0) measured no better, and L1's few fill buffers limit the misses in flight.
// Prefetches past the end of the weights never fault.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace strata {

inline constexpr int64_t kPrefetchPastRowGroup = 4096;

// `consumed`: bytes of the group read so far, counted as if the group were read in order.
[[gnu::always_inline]] inline void prefetch_past_row_group(const uint8_t* group, size_t group_bytes,
                                                           int64_t consumed) {
  _mm_prefetch(
      reinterpret_cast<const char*>(group) + group_bytes + kPrefetchPastRowGroup + consumed,
      _MM_HINT_T1);
}

}  // namespace strata
