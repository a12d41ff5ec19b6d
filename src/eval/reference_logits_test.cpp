#include "eval/reference_logits.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "eval/bootstrap.h"
#include "eval/eval_test_support.h"

namespace strata::eval {
namespace {

constexpr int64_t kVocab = 50;

// Two windows of 3 + 4 tokens with made-up token ids, and rows of random logits.
struct Fixture {
  Suite suite;
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<float>> fed_rows;  // [prompt + scored - 1][kVocab] per window

  Fixture() {
    SplitMix64 random(3);
    for (int w = 0; w < 2; ++w) {
      std::vector<int32_t> t;
      for (int i = 0; i < 7; ++i) t.push_back(int32_t(random.below(kVocab)));
      SuiteWindow window{fmt::format("d-{:03d}", w), "d", "doc", "d.jsonl", "", 10, 3, 4,
                         tokens_fnv1a64(t)};
      suite.windows.push_back(window);
      tokens.push_back(t);
      std::vector<float> rows(6 * kVocab);
      for (float& x : rows) x = float(4 * random.uniform());
      fed_rows.push_back(rows);
    }
  }
  std::span<const float> scored_rows(int w) const {
    return std::span(fed_rows[size_t(w)]).subspan(2 * kVocab);
  }
};

void write_floats(const std::filesystem::path& path, std::span<const float> values) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size_bytes()));
}

TEST(ReferenceLogits, FullRowsRoundTrip) {
  const Fixture f;
  const auto dir = testing::scratch_dir("full");
  auto writer = ReferenceWriter::create(dir.string(), kVocab, 0, {{"model", "m"}});
  ASSERT_TRUE(writer.ok());
  for (int w = 0; w < 2; ++w)
    ASSERT_TRUE(writer.value()
                    .write(f.suite.windows[size_t(w)], f.tokens[size_t(w)], f.scored_rows(w))
                    .ok());
  ASSERT_TRUE(writer.value().finish().ok());
  const auto reader = ReferenceReader::open(dir.string(), f.suite, kVocab);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ(reader.value().description()["model"], "m");
  for (int w = 0; w < 2; ++w) {
    const auto rows = reader.value().read(f.suite.windows[size_t(w)], f.tokens[size_t(w)]);
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    ASSERT_EQ(rows.value().full.size(), size_t(4 * kVocab));
    EXPECT_EQ(std::memcmp(rows.value().full.data(), f.scored_rows(w).data(), 4 * kVocab * 4), 0);
  }
  std::ifstream tokens(dir / "d-001.tokens.json");
  EXPECT_EQ(nlohmann::json::parse(tokens),
            nlohmann::json(std::vector<int32_t>(f.tokens[1].begin(), f.tokens[1].end() - 1)));
}

// A directory of `strata logits` dumps: rows after every fed token, no manifest.
TEST(ReferenceLogits, ReadsLogitsDumpsOfTheFedTokens) {
  const Fixture f;
  const auto dir = testing::scratch_dir("dumps");
  write_floats(dir / "d-000.logits.bin", f.fed_rows[0]);
  write_floats(dir / "d-001.logits.bin", f.scored_rows(1));  // scored rows only also work
  const auto reader = ReferenceReader::open(dir.string(), f.suite, kVocab);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  for (int w = 0; w < 2; ++w) {
    const auto rows = reader.value().read(f.suite.windows[size_t(w)], f.tokens[size_t(w)]);
    ASSERT_TRUE(rows.ok()) << rows.status().message();
    EXPECT_EQ(std::memcmp(rows.value().full.data(), f.scored_rows(w).data(), 4 * kVocab * 4), 0);
  }
}

TEST(ReferenceLogits, TopKRowsRoundTrip) {
  const Fixture f;
  const auto dir = testing::scratch_dir("topk");
  auto writer = ReferenceWriter::create(dir.string(), kVocab, 5, {});
  ASSERT_TRUE(writer.ok());
  for (int w = 0; w < 2; ++w)
    ASSERT_TRUE(writer.value()
                    .write(f.suite.windows[size_t(w)], f.tokens[size_t(w)], f.scored_rows(w))
                    .ok());
  ASSERT_TRUE(writer.value().finish().ok());
  const auto reader = ReferenceReader::open(dir.string(), f.suite, kVocab);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ(reader.value().top_k(), 5);
  const auto rows = reader.value().read(f.suite.windows[1], f.tokens[1]);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows.value().top_k.size(), 4u);
  for (int j = 0; j < 4; ++j) {
    const int32_t next = f.tokens[1][size_t(3 + j)];
    const TopKRow expected =
        top_k_row(f.scored_rows(1).subspan(size_t(j * kVocab), kVocab), 5, next);
    EXPECT_EQ(rows.value().top_k[size_t(j)].ids, expected.ids);
    EXPECT_EQ(rows.value().top_k[size_t(j)].log_probs, expected.log_probs);
    EXPECT_EQ(rows.value().top_k[size_t(j)].next_log_prob, expected.next_log_prob);
  }
}

TEST(ReferenceLogits, RefusesWhatDoesNotFitTheSuite) {
  const Fixture f;
  const auto dir = testing::scratch_dir("refusals");
  write_floats(dir / "d-000.logits.bin", std::span(f.fed_rows[0]).first(5 * kVocab));
  // Without a manifest every window's rows must be there before anything is scored: a
  // directory half written is refused as a whole.
  const auto half = ReferenceReader::open(dir.string(), f.suite, kVocab);
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().message(),
            dir.string() + ": no reference.json and no d-001.logits.bin: not a complete reference");
  write_floats(dir / "d-001.logits.bin", f.fed_rows[1]);
  const auto reader = ReferenceReader::open(dir.string(), f.suite, kVocab);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  const auto short_rows = reader.value().read(f.suite.windows[0], f.tokens[0]);
  ASSERT_FALSE(short_rows.ok());
  EXPECT_NE(short_rows.status().message().find("d-000.logits.bin: "), std::string::npos);

  std::ofstream(dir / "d-000.tokens.json") << "[1, 2, 3]";
  write_floats(dir / "d-000.logits.bin", f.fed_rows[0]);
  const auto other_tokens = reader.value().read(f.suite.windows[0], f.tokens[0]);
  ASSERT_FALSE(other_tokens.ok());
  EXPECT_NE(other_tokens.status().message().find("not the tokens of suite window d-000"),
            std::string::npos);

  // A manifest that lacks a window of the suite.
  const auto stored = testing::scratch_dir("one-window") / "reference";
  auto writer = ReferenceWriter::create(stored.string(), kVocab, 0, {});
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  ASSERT_TRUE(writer.value().write(f.suite.windows[0], f.tokens[0], f.scored_rows(0)).ok());
  ASSERT_TRUE(writer.value().finish().ok());
  const auto incomplete = ReferenceReader::open(stored.string(), f.suite, kVocab);
  ASSERT_FALSE(incomplete.ok());
  EXPECT_NE(incomplete.status().message().find("no reference for window d-001"), std::string::npos);
  Suite changed = f.suite;
  changed.windows.resize(1);
  changed.windows[0].tokens_fnv1a64 = "0000000000000000";
  EXPECT_FALSE(ReferenceReader::open(stored.string(), changed, kVocab).ok());
  EXPECT_FALSE(ReferenceReader::open(stored.string(), f.suite, kVocab + 1).ok());
}

// The directory appears when its manifest is written, never before; what was there is not
// replaced, and a writer that does not finish leaves nothing.
TEST(ReferenceLogits, WriterRenamesACompleteDirectoryIntoPlace) {
  const Fixture f;
  const auto parent = testing::scratch_dir("into-place");
  const auto dir = parent / "reference";
  {
    auto writer = ReferenceWriter::create(dir.string() + "/", kVocab, 0, {});
    ASSERT_TRUE(writer.ok()) << writer.status().message();
    ASSERT_TRUE(writer.value().write(f.suite.windows[0], f.tokens[0], f.scored_rows(0)).ok());
    EXPECT_FALSE(std::filesystem::exists(dir));
  }
  EXPECT_TRUE(std::filesystem::is_empty(parent));  // the unfinished writer's directory is gone
  auto writer = ReferenceWriter::create(dir.string(), kVocab, 0, {});
  ASSERT_TRUE(writer.ok());
  for (int w = 0; w < 2; ++w)
    ASSERT_TRUE(writer.value()
                    .write(f.suite.windows[size_t(w)], f.tokens[size_t(w)], f.scored_rows(w))
                    .ok());
  ASSERT_TRUE(writer.value().finish().ok());
  EXPECT_TRUE(ReferenceReader::open(dir.string(), f.suite, kVocab).ok());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(parent), {}), 1);
  const auto again = ReferenceWriter::create(dir.string(), kVocab, 0, {});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), dir.string() + ": already exists; --force replaces it");
  const auto orphan =
      ReferenceWriter::create((parent / "no" / "reference").string(), kVocab, 0, {});
  ASSERT_FALSE(orphan.ok());
  EXPECT_EQ(orphan.status().message(), (parent / "no").string() + ": no such directory");
}

TEST(ReferenceLogits, ManifestFieldsOfAnotherTypeAreRefused) {
  const Fixture f;
  const auto dir = testing::scratch_dir("manifest-types");
  auto writer = ReferenceWriter::create(dir.string(), kVocab, 0, {});
  for (int w = 0; w < 2; ++w)
    ASSERT_TRUE(writer.value()
                    .write(f.suite.windows[size_t(w)], f.tokens[size_t(w)], f.scored_rows(w))
                    .ok());
  ASSERT_TRUE(writer.value().finish().ok());
  const auto manifest_path = dir / "reference.json";
  std::ifstream in(manifest_path);
  const nlohmann::json good = nlohmann::json::parse(in);
  ASSERT_TRUE(ReferenceReader::open(dir.string(), f.suite, kVocab).ok());
  for (const auto& [pointer, value] :
       std::vector<std::pair<std::string, nlohmann::json>>{{"/format", 5},
                                                           {"/version", "1"},
                                                           {"/n_vocab", "50"},
                                                           {"/top_k", "8"},
                                                           {"/top_k", -1},
                                                           {"/windows", 3},
                                                           {"/windows/0/scored", "4"},
                                                           {"/windows/1/id", 12}}) {
    nlohmann::json bad = good;
    bad[nlohmann::json::json_pointer(pointer)] = value;
    std::ofstream(manifest_path) << bad.dump();
    const auto reader = ReferenceReader::open(dir.string(), f.suite, kVocab);
    ASSERT_FALSE(reader.ok()) << pointer;
    EXPECT_EQ(reader.status().message().rfind(manifest_path.string() + ": ", 0), 0u)
        << reader.status().message();
  }
}

}  // namespace
}  // namespace strata::eval
