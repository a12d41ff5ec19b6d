#include "experts/host_expert_cache.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

constexpr size_t kSlot = 4096;

// A lease filled and let go at once: whether it was a hit.
bool read_once(HostExpertCache& cache, uint64_t offset, size_t length = 1024) {
  const HostExpertCache::Lease lease = cache.acquire(offset, length);
  EXPECT_NE(lease.bytes, nullptr);
  cache.release(lease, true);
  return lease.hit;
}

TEST(HostExpertCache, HoldsTheMostRecentReadsAndGivesUpTheLeastRecent) {
  HostExpertCache cache(3 * kSlot + 100, kSlot);
  ASSERT_EQ(cache.n_slots(), 3);
  ASSERT_NE(cache.block(), nullptr);
  EXPECT_FALSE(read_once(cache, 0));
  EXPECT_FALSE(read_once(cache, 1 << 20));
  EXPECT_FALSE(read_once(cache, 2 << 20));
  EXPECT_TRUE(read_once(cache, 0));         // 0 is now the most recent, 1 MiB the least
  EXPECT_FALSE(read_once(cache, 3 << 20));  // gives up 1 MiB's slot
  EXPECT_FALSE(read_once(cache, 1 << 20));  // gives up 2 MiB's
  EXPECT_TRUE(read_once(cache, 0));
  EXPECT_TRUE(read_once(cache, 3 << 20));
  EXPECT_FALSE(read_once(cache, 2 << 20));
  const auto counters = cache.counters();
  EXPECT_EQ(counters.hits, 3u);
  EXPECT_EQ(counters.misses, 6u);
}

TEST(HostExpertCache, AFailedFillHoldsNothingAndAnotherLengthIsAnotherRead) {
  HostExpertCache cache(2 * kSlot, kSlot);
  const HostExpertCache::Lease failed = cache.acquire(0, 1024);
  cache.release(failed, false);
  EXPECT_FALSE(read_once(cache, 0));  // nothing was kept
  EXPECT_TRUE(read_once(cache, 0));
  EXPECT_FALSE(read_once(cache, 0, 2048));
  EXPECT_TRUE(read_once(cache, 0, 2048));
}

TEST(HostExpertCache, SlotsInUseAreNeverGivenUp) {
  HostExpertCache cache(2 * kSlot, kSlot);
  const HostExpertCache::Lease a = cache.acquire(0, 1024);
  const HostExpertCache::Lease b = cache.acquire(8192, 1024);
  ASSERT_NE(a.bytes, nullptr);
  ASSERT_NE(b.bytes, nullptr);
  EXPECT_NE(a.bytes, b.bytes);
  EXPECT_EQ(cache.acquire(16384, 1024).bytes, nullptr);  // both held: read around the cache
  cache.release(a, true);
  const HostExpertCache::Lease c = cache.acquire(16384, 1024);
  EXPECT_EQ(c.bytes, a.bytes);  // a's slot, the only one not in use
  cache.release(c, true);
  cache.release(b, true);
  EXPECT_TRUE(read_once(cache, 8192));
  EXPECT_FALSE(read_once(cache, 0));
}

TEST(HostExpertCache, BelowOneSlotThereIsNone) {
  HostExpertCache cache(kSlot - 1, kSlot);
  EXPECT_EQ(cache.n_slots(), 0);
  EXPECT_EQ(cache.acquire(0, 16).bytes, nullptr);
}

}  // namespace
}  // namespace strata
