#include "base/huge_page_memory.h"

#include <sys/mman.h>

#include <cstdlib>

#include "base/check.h"

namespace strata {

void FreeHugePageMemory::operator()(uint8_t* p) const { std::free(p); }

HugePageMemory allocate_on_huge_pages(size_t bytes, size_t alignment) {
  STRATA_CHECK_LE(alignment, kHugePageBytes);
  void* memory = nullptr;
  if (bytes == 0 || posix_memalign(&memory, kHugePageBytes, bytes) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
  ::madvise(memory, bytes, MADV_HUGEPAGE);
#endif
  return HugePageMemory(static_cast<uint8_t*>(memory));
}

}  // namespace strata
