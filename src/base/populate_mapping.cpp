#include "base/populate_mapping.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "base/progress.h"

namespace strata {

void populate_mapping(std::span<const uint8_t> bytes, ProgressBar* progress) {
  constexpr size_t kChunk = 64u << 20;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (size_t begin = 0; begin < bytes.size(); begin += kChunk) {
    const size_t length = std::min(kChunk, bytes.size() - begin);
    // madvise needs a page-aligned start; MADV_POPULATE_READ (Linux 5.14) faults the pages in
    // without copying; older kernels fall back to touching one byte a page.
    const auto address = reinterpret_cast<uintptr_t>(bytes.data() + begin);
    const uintptr_t aligned = address & ~uintptr_t(page - 1);
#ifdef MADV_POPULATE_READ
    const bool populated = ::madvise(reinterpret_cast<void*>(aligned), length + (address - aligned),
                                     MADV_POPULATE_READ) == 0;
#else
    const bool populated = false;
#endif
    if (!populated) {
      volatile uint8_t sink = 0;
      for (size_t offset = 0; offset < length; offset += page) sink = sink + bytes[begin + offset];
    }
    if (progress) progress->advance(length);
  }
}

}  // namespace strata
