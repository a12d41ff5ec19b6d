#include "eval/reference_files.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace strata::eval {
namespace {

constexpr int64_t kVocab = 10;

struct Entry {
  int32_t id;
  float log_prob;
};

// A .topk.bin row as the file stores it.
std::string top_k_row_bytes(float next_log_prob, std::initializer_list<Entry> entries) {
  std::string bytes(reinterpret_cast<const char*>(&next_log_prob), 4);
  for (const Entry& e : entries) {
    bytes.append(reinterpret_cast<const char*>(&e.id), 4);
    bytes.append(reinterpret_cast<const char*>(&e.log_prob), 4);
  }
  return bytes;
}

std::string error_of(const std::string& bytes) {
  const auto rows = parse_top_k_rows(bytes, "w.topk.bin", 1, 3, kVocab);
  return rows.ok() ? "accepted" : rows.status().message();
}

TEST(TopKRows, ReadsValidRows) {
  const std::string bytes =
      top_k_row_bytes(-1.5f, {{4, -0.1f}, {2, -2.5f}, {9, -2.5f}}) +
      top_k_row_bytes(-0.2f,
                      {{0, -0.2f}, {1, -3.0f}, {5, -std::numeric_limits<float>::infinity()}});
  const auto rows = parse_top_k_rows(bytes, "w.topk.bin", 2, 3, kVocab);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows.value().size(), 2u);
  EXPECT_EQ(rows.value()[0].ids, (std::vector<int32_t>{4, 2, 9}));
  EXPECT_EQ(rows.value()[1].log_probs[1], -3.0f);
  EXPECT_EQ(rows.value()[1].next_log_prob, -0.2f);
}

TEST(TopKRows, RefusesRowsThatWouldScoreGarbage) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(error_of(top_k_row_bytes(nan, {{4, -0.1f}, {2, -2.5f}, {9, -3.0f}})),
            "w.topk.bin: row 0: the next token's log-prob nan is not a log-probability");
  EXPECT_EQ(error_of(top_k_row_bytes(0.5f, {{4, -0.1f}, {2, -2.5f}, {9, -3.0f}})),
            "w.topk.bin: row 0: the next token's log-prob 0.5 is not a log-probability");
  EXPECT_EQ(error_of(top_k_row_bytes(-1.0f, {{4, -2.5f}, {2, -0.1f}, {9, -3.0f}})),
            "w.topk.bin: row 0: entries are not in descending probability");
  EXPECT_EQ(error_of(top_k_row_bytes(-1.0f, {{4, -0.1f}, {2, -2.5f}, {4, -3.0f}})),
            "w.topk.bin: row 0: a token appears twice");
  EXPECT_EQ(error_of(top_k_row_bytes(-1.0f, {{4, -0.1f}, {10, -2.5f}, {9, -3.0f}})),
            "w.topk.bin: row 0: entry with id 10 and log-prob -2.5 is out of range");
  EXPECT_EQ(error_of(top_k_row_bytes(-1.0f, {{4, -0.1f}, {2, nan}, {9, -3.0f}})),
            "w.topk.bin: row 0: entry with id 2 and log-prob nan is out of range");
  EXPECT_EQ(error_of("abc"), "w.topk.bin: 3 bytes, expected 1 rows of top-3 (28 bytes)");
}

std::string floats(std::vector<float> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

TEST(FullRows, KeepsTheScoredRowsOfADump) {
  std::vector<float> dump(3 * kVocab);
  for (size_t i = 0; i < dump.size(); ++i) dump[i] = float(i);
  const auto rows = parse_full_rows(floats(dump), "w.logits.bin", 2, 3, kVocab, "w");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(rows.value(), std::vector<float>(dump.begin() + kVocab, dump.end()));
  const auto scored_only = parse_full_rows(floats(rows.value()), "w.logits.bin", 2, 3, kVocab, "w");
  ASSERT_TRUE(scored_only.ok());
  EXPECT_EQ(scored_only.value(), rows.value());
}

TEST(FullRows, RefusesOtherSizesAndLogitsThatAreNotFinite) {
  std::vector<float> rows(2 * kVocab, 1.0f);
  const auto four =
      parse_full_rows(floats(std::vector<float>(4 * kVocab)), "w.logits.bin", 2, 3, kVocab, "w");
  ASSERT_FALSE(four.ok());
  EXPECT_EQ(four.status().message(),
            "w.logits.bin: 160 bytes; expected 2 or 3 rows of 10 float32 logits (scored "
            "positions, or a `strata logits` dump of w.tokens.json)");
  rows[kVocab + 7] = std::numeric_limits<float>::infinity();
  const auto infinite = parse_full_rows(floats(rows), "w.logits.bin", 2, 3, kVocab, "w");
  ASSERT_FALSE(infinite.ok());
  EXPECT_EQ(infinite.status().message(),
            "w.logits.bin: scored row 1: logit inf of token 7 is not finite");
}

TEST(ReferenceManifestText, ReadsTopKAndDescription) {
  Suite suite;
  suite.windows.push_back({.id = "d-000", .prompt = 3, .scored = 4, .tokens_fnv1a64 = "00ff"});
  const std::string text = R"({"format": "strata-eval-reference", "version": 1, "n_vocab": 10,
      "top_k": 4, "reference": {"model": "r.gguf"},
      "windows": [{"id": "d-000", "tokens_fnv1a64": "00ff", "scored": 4}]})";
  const auto manifest = parse_reference_manifest(text, "reference.json", suite, kVocab);
  ASSERT_TRUE(manifest.ok()) << manifest.status().message();
  EXPECT_EQ(manifest.value().top_k, 4);
  EXPECT_EQ(manifest.value().description["model"], "r.gguf");
  const auto other_vocab = parse_reference_manifest(text, "reference.json", suite, 11);
  ASSERT_FALSE(other_vocab.ok());
  EXPECT_EQ(other_vocab.status().message(),
            "reference.json: rows of 10 logits, the candidate has 11");
}

}  // namespace
}  // namespace strata::eval
