#include "runtime/expert_usage.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace strata {
namespace {

TEST(ExpertUsage, SavesAndLoadsCountsAndRanksTheHottestFirst) {
  ExpertUsage usage(2, 3);
  for (int i = 0; i < 3; ++i) usage.add(1, 2);
  usage.add(0, 1);
  usage.add(1, 0);
  const std::string path = (std::filesystem::temp_directory_path() / "strata-usage-test.json");
  ASSERT_TRUE(usage.save(path).ok());
  const auto loaded = ExpertUsage::load(path, 2, 3);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded.value().count(1, 2), 3u);
  const std::vector<std::pair<int, int32_t>> hottest = {{1, 2}, {0, 1}, {1, 0}};
  EXPECT_EQ(loaded.value().hottest(), hottest);
  EXPECT_FALSE(ExpertUsage::load(path, 2, 4).ok());
  std::filesystem::remove(path);
}

// Each broken file is one error line naming it; fields of another type are errors too, where
// nlohmann's accessors would throw.
TEST(ExpertUsage, RefusesBrokenFilesWithOneLine) {
  const std::string good =
      R"({"format": "strata-expert-usage", "version": 1, "n_layer": 2, "n_expert": 2, )"
      R"("counts": [[1, 0], [0, 4]]})";
  ASSERT_TRUE(ExpertUsage::parse(good, "warm.json", 2, 2).ok());
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return text;
  };
  for (const std::string& bad :
       {std::string("not json"), std::string("[1, 2]"), replaced("\"strata-expert-usage\"", "5"),
        replaced("\"n_layer\": 2", "\"n_layer\": \"2\""),
        replaced("\"n_expert\": 2", "\"n_expert\": 3"), replaced("[[1, 0], [0, 4]]", "{}"),
        replaced("[[1, 0], [0, 4]]", "[[1, 0]]"), replaced("[[1, 0], [0, 4]]", "[[1, -1], [0, 4]]"),
        replaced("[[1, 0], [0, 4]]", "[[1, 0.5], [0, 4]]"),
        replaced("[[1, 0], [0, 4]]", "[[1], [0, 4]]"),
        replaced(", \"counts\": [[1, 0], [0, 4]]", "")}) {
    const auto parsed = ExpertUsage::parse(bad, "warm.json", 2, 2);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().message().rfind("warm.json: ", 0), 0u) << parsed.status().message();
    EXPECT_EQ(parsed.status().message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace strata
