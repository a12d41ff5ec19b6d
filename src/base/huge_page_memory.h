// Large buffers that kernels stream (dense weights, the expert arena, the bandwidth probe):
// aligned to 2 MiB and advised onto transparent huge pages. Streaming loads then miss the TLB
// once per 2 MiB instead of every 4 KiB, and an O_DIRECT read into the buffer pins a few folios
// instead of hundreds of pages. On this project's reference VM, 4 KiB pages read 2-3 % slower
// than 2 MiB ones (lab/memory_bandwidth.h), and a resident GGUF's page cache is mapped in 2 MiB
// pages anyway. The advice is only that: where transparent huge pages are off, the buffer works
// the same on small pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace strata {

inline constexpr size_t kHugePageBytes = size_t(2) << 20;

struct FreeHugePageMemory {
  size_t mapped_bytes = 0;
  void operator()(uint8_t* p) const;
};
using HugePageMemory = std::unique_ptr<uint8_t, FreeHugePageMemory>;

// `bytes` (> 0) of zeroed, never-touched memory at a 2 MiB boundary, which also satisfies
// `alignment` (an O_DIRECT reader's, say); null when the allocation fails. REQUIRES: alignment <= 2
// MiB.
HugePageMemory allocate_on_huge_pages(size_t bytes, size_t alignment = 1);

}  // namespace strata
