#include "base/huge_page_memory.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace strata {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

bool transparent_huge_pages_off() {
  std::ifstream setting("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return !std::getline(setting, line) || line.find("[never]") != std::string::npos;
}

// A field ("AnonHugePages:", "Rss:") of the mapping that contains `address`, in bytes
// (/proc/self/smaps).
size_t smaps_bytes_at(const void* address, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  const auto target = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= target && target < end;
    } else if (inside && line.rfind(field, 0) == 0) {
      return std::stoull(line.substr(field.size())) * 1024;
    }
  }
  return 0;
}

size_t anon_huge_page_bytes_at(const void* address) {
  return smaps_bytes_at(address, "AnonHugePages:");
}

TEST(HugePageMemory, IsAlignedZeroedAndWritable) {
  HugePageMemory memory = allocate_on_huge_pages(3 * kMiB + 5, 4096);
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(memory.get()) % kHugePageBytes, 0u);
  EXPECT_EQ(memory.get()[0], 0);
  EXPECT_EQ(memory.get()[3 * kMiB + 4], 0);
  std::memset(memory.get(), 0x5a, 3 * kMiB + 5);
  EXPECT_EQ(memory.get()[3 * kMiB + 4], 0x5a);
  EXPECT_EQ(allocate_on_huge_pages(0), nullptr);
}

// The memory plan counts a buffer at its size: written whole, it is resident at that size (to a
// small page), not rounded up to the next huge page.
TEST(HugePageMemory, IsResidentAtItsSize) {
  constexpr size_t kBytes = 3 * kMiB + 5;
  HugePageMemory memory = allocate_on_huge_pages(kBytes, 4096);
  ASSERT_NE(memory, nullptr);
  std::memset(memory.get(), 1, kBytes);
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(smaps_bytes_at(memory.get(), "Rss:"), (kBytes + page - 1) / page * page);
}

// Memory the heap recycles was faulted in on small pages; a buffer carved from it stays on them
// whatever the advice. Late in a long process (the bench's disk probe), that made O_DIRECT reads
// three times slower on a virtual disk.
TEST(HugePageMemory, GetsHugePagesAfterTheHeapRecycledSmallPages) {
  if (transparent_huge_pages_off()) GTEST_SKIP() << "transparent huge pages are off here";
  // In a child process, since it changes malloc's settings for good: blocks up to 64 MiB come
  // from the heap, which keeps what is freed; one is touched and freed, so its pages stay
  // faulted in on 4 KiB pages, ready for the next block of that size.
  constexpr size_t kBytes = 8 * kMiB;
  EXPECT_EXIT(
      {
        mallopt(M_MMAP_THRESHOLD, int(64 * kMiB));
        mallopt(M_TRIM_THRESHOLD, int(256 * kMiB));
        void* recycled = std::malloc(12 * kMiB);
        std::memset(recycled, 1, 12 * kMiB);
        std::free(recycled);
        HugePageMemory memory = allocate_on_huge_pages(kBytes);
        if (memory == nullptr) std::exit(2);
        std::memset(memory.get(), 1, kBytes);
        std::exit(anon_huge_page_bytes_at(memory.get()) >= kBytes / 2 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace strata
