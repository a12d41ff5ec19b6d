#include "experts/successor_ranks.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

TEST(SuccessorRanks, UnknownUntilAVisitIsObserved) {
  SuccessorRanks ranks(2, 4);
  EXPECT_EQ(ranks.bucket(0, 0), -1);
  ranks.observe(0, std::vector<int32_t>{1}, false);
  EXPECT_EQ(ranks.bucket(0, 0), 0);   // no counts yet: ranks by expert id
  EXPECT_EQ(ranks.bucket(1, 0), -1);  // layers are separate
  ranks.invalidate(0);
  EXPECT_EQ(ranks.bucket(0, 0), -1);
}

TEST(SuccessorRanks, RanksTheExpertsThatFollowedFirst) {
  SuccessorRanks ranks(1, 4);
  ranks.observe(0, std::vector<int32_t>{1}, false);
  ranks.observe(0, std::vector<int32_t>{3}, true);  // 3 followed 1
  ranks.observe(0, std::vector<int32_t>{1}, true);  // 1 followed 3
  EXPECT_EQ(ranks.bucket(0, 3), 0);
  EXPECT_EQ(ranks.bucket(0, 0), 1);
  EXPECT_EQ(ranks.bucket(0, 1), 2);
  EXPECT_EQ(ranks.bucket(0, 2), 3);
  ranks.observe(0, std::vector<int32_t>{3}, true);
  EXPECT_EQ(ranks.bucket(0, 1), 0);
}

TEST(SuccessorRanks, APairIsCountedOnlyWhenTheVisitFollows) {
  SuccessorRanks ranks(1, 4);
  ranks.observe(0, std::vector<int32_t>{1}, false);
  ranks.observe(0, std::vector<int32_t>{3}, false);  // a prompt chunk came between
  ranks.observe(0, std::vector<int32_t>{1}, true);
  EXPECT_EQ(ranks.bucket(0, 3), 3);  // nothing followed 1: ranks by expert id
}

TEST(SuccessorRanks, BucketsRanksByHalfOctavesFromEight) {
  SuccessorRanks ranks(1, 256);
  ranks.observe(0, std::vector<int32_t>{0}, false);  // no counts: rank = expert id
  const std::vector<std::pair<int, int>> expected = {
      {0, 0},   {7, 7},   {8, 8},   {11, 8},  {12, 9},  {15, 9},  {16, 10}, {23, 10}, {24, 11},
      {31, 11}, {32, 12}, {47, 12}, {48, 13}, {63, 13}, {64, 14}, {95, 14}, {96, 15}, {255, 15}};
  for (const auto& [rank, bucket] : expected) EXPECT_EQ(ranks.bucket(0, rank), bucket) << rank;
}

}  // namespace
}  // namespace strata
