#include "experts/lab/expert_trace.h"

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

// small_trace with the predictor's picks for layer 1 of both tokens.
ExpertTrace predicted_trace() {
  ExpertTrace t = small_trace();
  t.has_predictions = true;
  t.predictions = {5, 299, 4, 3};  // 2 tokens x 1 layer x 2
  return t;
}

bool has(const Status& status, std::string_view text) {
  return !status.ok() && status.message().find(text) != std::string::npos;
}

TEST(ExpertTrace, EncodesTheDocumentedLayout) {
  const std::vector<uint8_t> want = {'S', 'T', 'R', 'T', 'R', 'A', 'C', 'E',  // magic
                                     2,   0,   0,   0,                        // version
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

TEST(ExpertTrace, EncodesPredictionsAfterTheExperts) {
  std::vector<uint8_t> want = encode_expert_trace(small_trace());
  want[12] = 2;  // flags: predictions
  for (uint8_t byte : {5, 0, 43, 1, 4, 0, 3, 0}) want.push_back(byte);
  EXPECT_EQ(encode_expert_trace(predicted_trace()), want);
  const auto decoded = decode_expert_trace(want, "p.trace");
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_TRUE(decoded->has_predictions);
  EXPECT_EQ(decoded->predictions, predicted_trace().predictions);
  EXPECT_EQ(decoded->predicted(1, 1)[0], 4);
  EXPECT_EQ(decoded->experts, small_trace().experts);
}

TEST(ExpertTrace, ReadsVersionOne) {
  std::vector<uint8_t> bytes = encode_expert_trace(small_trace());
  bytes[8] = 1;
  const auto decoded = decode_expert_trace(bytes, "old.trace");
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_FALSE(decoded->has_predictions);
  EXPECT_EQ(decoded->experts, small_trace().experts);
  bytes[12] = 2;  // version 1 had no predictions
  EXPECT_TRUE(has(decode_expert_trace(bytes, "old.trace").status(), "unknown flags 0x2"));
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
  EXPECT_TRUE(has(with(8, {3}), "version 3"));
  EXPECT_TRUE(has(with(12, {4}), "unknown flags 0x4"));
  EXPECT_TRUE(has(with(12, {2}), "bad.trace: the header claims 2 tokens"));
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

TEST(ExpertTrace, NamesEachBadPrediction) {
  const auto good = encode_expert_trace(predicted_trace());
  const auto with = [&](size_t offset, std::vector<uint8_t> patch) {
    auto bytes = good;
    std::copy(patch.begin(), patch.end(), bytes.begin() + ptrdiff_t(offset));
    return decode_expert_trace(bytes, "bad.trace").status();
  };
  EXPECT_TRUE(has(with(68, {44, 1}), "token 0 layer 1 (prediction): expert 300 is not below"));
  EXPECT_TRUE(has(with(72, {4}), "token 1 layer 1 (prediction): expert 4 is listed twice"));
  const std::vector<uint8_t> shorter(good.begin(), good.end() - 2);
  EXPECT_TRUE(has(decode_expert_trace(shorter, "short.trace").status(), "short.trace: 24 bytes"));
}

TEST(ExpertTrace, RefusesInconsistentPredictionsWhenEncoding) {
  ExpertTrace t = predicted_trace();
  t.predictions.pop_back();
  EXPECT_TRUE(has(validate_expert_trace(t, "t"), "3 predicted ids for 2 tokens; expected 4"));
  t = small_trace();
  t.predictions = {1, 2};
  EXPECT_TRUE(has(validate_expert_trace(t, "t"), "2 predicted ids for 2 tokens; expected 0"));
}

TEST(ExpertTrace, EveryTruncationWithPredictionsIsAnError) {
  const auto bytes = encode_expert_trace(predicted_trace());
  for (size_t n = 0; n < bytes.size(); ++n)
    ASSERT_FALSE(decode_expert_trace({bytes.data(), n}, "cut.trace").ok()) << n;
}

TEST(ExpertTrace, BitFlipsNeverCrash) {
  for (const ExpertTrace& trace : {small_trace(), predicted_trace()}) {
    const auto good = encode_expert_trace(trace);
    for (size_t bit = 0; bit < 8 * good.size(); ++bit) {
      auto bytes = good;
      bytes[bit / 8] ^= uint8_t(1u << (bit % 8));
      const auto decoded = decode_expert_trace(bytes, "flip.trace");
      if (decoded.ok()) {
        EXPECT_EQ(encode_expert_trace(decoded.value()), bytes);
      }
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

TEST(ExpertTraceRecorder, CollectsPredictionsInAnyOrder) {
  ExpertTraceRecorder recorder(3, 16, 2);
  const std::vector<int32_t> picks = {1, 2};
  for (int layer = 0; layer < 3; ++layer)
    for (int64_t position = 0; position < 2; ++position) recorder.record(layer, position, picks);
  recorder.record_prediction(2, 1, std::vector<int32_t>{15, 0});
  recorder.record_prediction(1, 0, std::vector<int32_t>{3, 4});
  recorder.record_prediction(2, 0, std::vector<int32_t>{5, 6});
  recorder.record_prediction(1, 1, std::vector<int32_t>{7, 8});
  const auto trace = recorder.finish(2, true, "");
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_TRUE(trace->has_predictions);
  EXPECT_EQ(trace->predictions, (std::vector<uint16_t>{3, 4, 5, 6, 7, 8, 15, 0}));
}

TEST(ExpertTraceRecorder, RefusesMissingStrayAndBadPredictions) {
  const std::vector<int32_t> ok = {1, 2};
  const auto routed = [&](ExpertTraceRecorder& recorder) {
    for (int layer = 0; layer < 2; ++layer)
      for (int64_t position = 0; position < 2; ++position) recorder.record(layer, position, ok);
  };
  {
    ExpertTraceRecorder recorder(2, 8, 2);
    routed(recorder);
    recorder.record_prediction(1, 0, ok);
    EXPECT_TRUE(
        has(recorder.finish(0, false, "").status(), "no prediction for position 1 layer 1"));
  }
  {
    ExpertTraceRecorder recorder(2, 8, 2);
    routed(recorder);
    for (int64_t position = 0; position < 3; ++position)
      recorder.record_prediction(1, position, ok);
    EXPECT_TRUE(has(recorder.finish(0, false, "").status(), "position 2, which was never routed"));
  }
  {
    ExpertTraceRecorder recorder(2, 8, 2);
    routed(recorder);
    recorder.record_prediction(0, 0, ok);  // layer 0 has no predictor
    EXPECT_TRUE(has(recorder.finish(0, false, "").status(), "bad prediction report (layer 0"));
  }
  {
    ExpertTraceRecorder recorder(2, 8, 2);
    routed(recorder);
    recorder.record_prediction(1, 0, ok);
    recorder.record_prediction(1, 0, ok);
    EXPECT_TRUE(has(recorder.finish(0, false, "").status(),
                    "prediction for position 0 layer 1 "
                    "reported twice"));
  }
  {
    ExpertTraceRecorder recorder(2, 8, 2);
    routed(recorder);
    recorder.record_prediction(1, 0, std::vector<int32_t>{4, 4});
    recorder.record_prediction(1, 1, ok);
    EXPECT_TRUE(has(recorder.finish(0, false, "").status(), "(prediction): expert 4 is listed"));
  }
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
