#include "base/huge_page_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include "base/check.h"

namespace strata {
namespace {

size_t round_up(size_t bytes, size_t unit) { return (bytes + unit - 1) / unit * unit; }

}  // namespace

void FreeHugePageMemory::operator()(uint8_t* p) const { ::munmap(p, mapped_bytes); }

// A fresh mapping, never the heap: memory that malloc recycles may already be faulted in on
// 4 KiB pages, which the advice does not change. That is how the bench's disk probe, allocated
// late in a long process, read into small pages and measured a third of the disk's speed.
//
// The mapping ends where the buffer does (at a small page), not at the next 2 MiB boundary: the
// kernel then backs a last, partial 2 MiB with small pages, so the buffer's resident memory is
// its size, as the memory plan counts it, rather than up to 2 MiB more.
HugePageMemory allocate_on_huge_pages(size_t bytes, size_t alignment) {
  STRATA_CHECK_LE(alignment, kHugePageBytes);
  if (bytes == 0) return nullptr;
  const size_t mapped = round_up(bytes, size_t(::sysconf(_SC_PAGESIZE)));
  // One huge page more than needed, so that a 2 MiB boundary lies within; the rest is unmapped.
  void* raw = ::mmap(nullptr, mapped + kHugePageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start, kHugePageBytes);
  if (aligned > start) ::munmap(raw, aligned - start);
  const uintptr_t tail = aligned + mapped;
  const uintptr_t end = start + mapped + kHugePageBytes;
  if (end > tail) ::munmap(reinterpret_cast<void*>(tail), end - tail);
  auto* memory = reinterpret_cast<uint8_t*>(aligned);
#ifdef MADV_HUGEPAGE
  ::madvise(memory, mapped, MADV_HUGEPAGE);
#endif
  return HugePageMemory(memory, FreeHugePageMemory{mapped});
}

}  // namespace strata
