#include "base/json_field.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(JsonField, ReadsAFieldOfTheAskedType) {
  const auto json = nlohmann::json::parse(R"({"s": "x", "b": true, "i": -3, "u": 7, "f": 0.5})");
  EXPECT_EQ(json_field<std::string>(json, "s"), "x");
  EXPECT_EQ(json_field<bool>(json, "b"), true);
  EXPECT_EQ(json_field<int>(json, "i"), -3);
  EXPECT_EQ(json_field<uint64_t>(json, "u"), 7u);
  EXPECT_EQ(json_field<double>(json, "f"), 0.5);
  EXPECT_EQ(json_field<double>(json, "i"), -3.0);
}

TEST(JsonField, AnythingElseIsNulloptNotAnException) {
  const auto json = nlohmann::json::parse(R"({"s": "x", "i": -3, "f": 0.5, "big": 4294967296})");
  EXPECT_EQ(json_field<int>(json, "s"), std::nullopt);
  EXPECT_EQ(json_field<std::string>(json, "i"), std::nullopt);
  EXPECT_EQ(json_field<uint64_t>(json, "i"), std::nullopt);
  EXPECT_EQ(json_field<int>(json, "f"), std::nullopt);
  EXPECT_EQ(json_field<int32_t>(json, "big"), std::nullopt);
  EXPECT_EQ(json_field<int64_t>(json, "big"), 4294967296);
  EXPECT_EQ(json_field<bool>(json, "i"), std::nullopt);
  EXPECT_EQ(json_field<int>(json, "missing"), std::nullopt);
  EXPECT_EQ(json_field<int>(nlohmann::json::array({1}), "0"), std::nullopt);
  EXPECT_EQ(json_member(nlohmann::json("text"), "s"), nullptr);
}

TEST(JsonField, QuotedTextIsOneLine) {
  EXPECT_EQ(json_quoted("code-000"), "\"code-000\"");
  EXPECT_EQ(json_quoted("a\nb\r\"c"), "\"a\\nb\\r\\\"c\"");
  EXPECT_EQ(json_quoted("bad \xff byte"), "\"bad \xef\xbf\xbd byte\"");  // U+FFFD, not a throw
}

}  // namespace
}  // namespace strata
