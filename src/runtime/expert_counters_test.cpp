#include <strata/expert_counters.h>
#include <strata/expert_counters_json.h>

#include <gtest/gtest.h>

namespace strata {
namespace {

// Every counter a different value, none a sum of others, so a field added to, left out of or
// swapped in the arithmetic or the JSON shows.
ExpertCounters distinct_counters(uint64_t scale) {
  return {.hits = 1 * scale,
          .readahead_hits = 2 * scale,
          .late_readaheads = 4 * scale,
          .misses = 8 * scale,
          .misses_on_host = 1024 * scale,
          .readaheads_issued = 16 * scale,
          .readaheads_wasted = 32 * scale,
          .bytes_read = 64 * scale,
          .missed_bytes = 128 * scale,
          .host_arena_hits = 256 * scale,
          .host_arena_misses = 512 * scale,
          .host_wait_ms = 0.5 * double(scale),
          .disk_active_ms = 0.25 * double(scale)};
}
const ExpertCounters kBefore = distinct_counters(1);
const ExpertCounters kDuring = distinct_counters(1000);

TEST(ExpertCounters, AReadingLessAnEarlierOneIsWhatHappenedBetween) {
  ExpertCounters after = kBefore;
  after += kDuring;
  EXPECT_EQ(after.hits, 1001u);
  EXPECT_EQ(after.missed_bytes, 128128u);
  EXPECT_EQ(after.disk_active_ms, 250.25);
  after -= kBefore;
  EXPECT_EQ(after, kDuring);
}

TEST(ExpertCounters, HitRateCountsReadaheadHitsAmongAllClaims) {
  EXPECT_DOUBLE_EQ(kDuring.hit_rate(), 3000.0 / 15000.0);
  EXPECT_EQ(ExpertCounters().hit_rate(), 0.0);
}

// The keys scripts and committed records (`run --stats`, `eval run`) read.
TEST(ExpertCounters, JsonNamesEveryCounterAsTheRecordsDo) {
  const nlohmann::json expected = nlohmann::json::parse(R"({
    "hits": 1000, "readahead_hits": 2000, "late_readaheads": 4000, "misses": 8000,
    "readaheads_issued": 16000, "readaheads_wasted": 32000, "bytes_read": 64000,
    "missed_bytes": 128000, "host_arena_hits": 256000, "host_arena_misses": 512000,
    "misses_on_host": 1024000, "host_wait_ms": 500.0, "disk_active_ms": 250.0,
    "hit_rate": 0.2})");
  const nlohmann::json written = expert_counters_json(kDuring);
  EXPECT_EQ(written, expected) << written.dump();
  EXPECT_TRUE(written["hits"].is_number_unsigned());
  EXPECT_TRUE(written["host_wait_ms"].is_number_float());
}

}  // namespace
}  // namespace strata
