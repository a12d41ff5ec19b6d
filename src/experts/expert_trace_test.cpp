#include "experts/expert_trace.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace strata {
namespace {

ExpertTrace small_trace() {
  ExpertTrace t;
  t.n_layer = 2;
  t.n_expert = 300;
  t.n_expert_used = 2;
  t.n_prompt_tokens = 1;
  t.teacher_forced = false;
  t.note = "hi";
  t.experts = {1, 0, 299, 5, 7, 258, 3, 4};  // 2 tokens x 2 layers x 2
  return t;
}

bool has(const Status& status, std::string_view text) {
  return !status.ok() && status.message().find(text) != std::string::npos;
}

TEST(ExpertTrace, EncodesTheDocumentedLayout) {
  const std::vector<uint8_t> want = {'S', 'T', 'R', 'T', 'R', 'A', 'C', 'E',  // magic
                                     1,   0,   0,   0,                        // version
                                     0,   0,   0,   0,                        // flags
                                     2,   0,   0,   0,                        // n_layer
                                     44,  1,   0,   0,                        // n_expert = 300
                                     2,   0,   0,   0,                        // k
                                     2,   0,   0,   0,                        // note bytes
                                     2,   0,   0,   0,   0,   0,   0,   0,    // n_tokens
                                     1,   0,   0,   0,   0,   0,   0,   0,    // n_prompt_tokens
                                     'h', 'i',                                // note
                                     1,   0,   0,   0,   43,  1,   5,   0,
                                     7,   0,   2,   1,   3,   0,   4,   0};
  EXPECT_EQ(encode_expert_trace(small_trace()), want);
}

TEST(ExpertTrace, RoundTripsThroughAFile) {
  ExpertTrace t = small_trace();
  t.teacher_forced = true;
  const std::string path = ::testing::TempDir() + "/round_trip.trace";
  {
    const auto bytes = encode_expert_trace(t);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  const auto read = read_expert_trace(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->n_layer, 2u);
  EXPECT_EQ(read->n_expert, 300u);
  EXPECT_EQ(read->n_expert_used, 2u);
  EXPECT_EQ(read->n_tokens(), 2u);
  EXPECT_EQ(read->n_prompt_tokens, 1u);
  EXPECT_TRUE(read->teacher_forced);
  EXPECT_EQ(read->note, "hi");
  EXPECT_EQ(read->experts, t.experts);
  EXPECT_EQ(read->picks(1, 0)[1], 258);
  std::remove(path.c_str());
  EXPECT_TRUE(has(read_expert_trace(path).status(), "cannot open"));
}

TEST(ExpertTrace, EveryTruncationIsAnError) {
  const auto bytes = encode_expert_trace(small_trace());
  for (size_t n = 0; n < bytes.size(); ++n) {
    const auto decoded = decode_expert_trace({bytes.data(), n}, "cut.trace");
    ASSERT_FALSE(decoded.ok()) << n;
    EXPECT_EQ(decoded.status().message().rfind("cut.trace: ", 0), 0u);
  }
}

TEST(ExpertTrace, NamesEachBadField) {
  const auto good = encode_expert_trace(small_trace());
  const auto with = [&](size_t offset, std::vector<uint8_t> patch) {
    auto bytes = good;
    std::copy(patch.begin(), patch.end(), bytes.begin() + ptrdiff_t(offset));
    return decode_expert_trace(bytes, "bad.trace").status();
  };
  EXPECT_TRUE(has(with(0, {'X'}), "no STRTRACE magic"));
  EXPECT_TRUE(has(with(8, {2}), "version 2"));
  EXPECT_TRUE(has(with(12, {2}), "unknown flags 0x2"));
  EXPECT_TRUE(has(with(16, {0}), "n_layer 0"));
  EXPECT_TRUE(has(with(20, {0, 0}), "n_expert 0"));
  EXPECT_TRUE(has(with(24, {0}), "0 experts per token"));
  EXPECT_TRUE(has(with(28, {3}), "note of 3 bytes"));
  EXPECT_TRUE(has(with(28, {0, 0, 2}), "note of 131072 bytes exceeds"));
  EXPECT_TRUE(has(with(32, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), "claims"));
  EXPECT_TRUE(has(with(40, {3}), "3 prompt tokens but only 2"));
  EXPECT_TRUE(has(with(54, {44, 1}), "token 0 layer 1: expert 300 is not below"));
  EXPECT_TRUE(has(with(64, {3}), "token 1 layer 1: expert 3 is listed twice"));
  auto longer = good;
  longer.push_back(0);
  EXPECT_TRUE(has(decode_expert_trace(longer, "long.trace").status(), "long.trace: 19 bytes"));
}

TEST(ExpertTrace, BitFlipsNeverCrash) {
  const auto good = encode_expert_trace(small_trace());
  for (size_t bit = 0; bit < 8 * good.size(); ++bit) {
    auto bytes = good;
    bytes[bit / 8] ^= uint8_t(1u << (bit % 8));
    const auto decoded = decode_expert_trace(bytes, "flip.trace");
    if (decoded.ok()) {
      EXPECT_EQ(encode_expert_trace(decoded.value()), bytes);
    }
  }
}

TEST(ExpertTraceRecorder, AcceptsReportsInAnyOrder) {
  ExpertTraceRecorder recorder(2, 300, 2);
  // A prefill chunk reports layer by layer, then decode token by token.
  const std::vector<int32_t> picks[3][2] = {
      {{1, 0}, {299, 5}}, {{7, 258}, {3, 4}}, {{9, 8}, {6, 2}}};
  for (int layer = 0; layer < 2; ++layer)
    for (int64_t position = 0; position < 2; ++position)
      recorder.record(layer, position, picks[position][layer]);
  for (int layer = 0; layer < 2; ++layer) recorder.record(layer, 2, picks[2][layer]);
  const auto trace = recorder.finish(2, false, "note");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_EQ(trace->experts, (std::vector<uint16_t>{1, 0, 299, 5, 7, 258, 3, 4, 9, 8, 6, 2}));
  EXPECT_EQ(trace->n_prompt_tokens, 2u);
}

TEST(ExpertTraceRecorder, RefusesGapsRepeatsAndBadIds) {
  const std::vector<int32_t> ok = {1, 2};
  {
    ExpertTraceRecorder recorder(2, 8, 2);
    recorder.record(0, 0, ok);
    recorder.record(0, 1, ok);
    recorder.record(1, 1, ok);
    EXPECT_TRUE(has(recorder.finish(0, false, "").status(), "position 0 layer 1 was never"));
  }
  {
    ExpertTraceRecorder recorder(1, 8, 2);
    recorder.record(0, 0, ok);
    recorder.record(0, 0, ok);
    EXPECT_TRUE(has(recorder.finish(0, false, "").status(), "reported twice"));
  }
  {
    ExpertTraceRecorder recorder(1, 8, 2);
    recorder.record(0, 0, std::vector<int32_t>{1, 8});
    EXPECT_TRUE(has(recorder.finish(0, false, "").status(), "expert 8 out of range"));
  }
  {
    ExpertTraceRecorder recorder(1, 8, 2);
    recorder.record(0, 0, std::vector<int32_t>{3, 3});
    EXPECT_TRUE(has(recorder.finish(0, false, "").status(), "listed twice"));
  }
}

}  // namespace
}  // namespace strata
