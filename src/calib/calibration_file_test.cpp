// Calibration on the golden synthetic qwen3moe (hidden 128, expert FFN 64, 8 experts, top-2):
// what the statistics must add up to, the file's round trip, its refusals (another model, too
// little text, a calibration of another shape), and hostile bytes: every truncation and
// thousands of random corruptions of a real file give an error line or a valid calibration,
// never a crash (the sanitizer build runs this too).
#include "calib/calibration_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "base/whole_file.h"
#include "calib/calib_test_support.h"
#include "model/model_file_test_support.h"

namespace strata {
namespace {

using testing::golden_synthetic;

const std::string kModel = golden_synthetic("models/tiny-qwen3moe-f32.gguf");
const std::string kOtherModel = golden_synthetic("models/tiny-qwen2moe-f32.gguf");

const ExpertCalibration& calibration() {
  static const ExpertCalibration c = [] {
    CalibrationOptions options;
    options.n_threads = 2;
    options.window = 100;
    options.n_samples = 16;
    auto result = calibrate_experts(kModel, testing::random_text(600, 1, 2),
                                    {"test:one", "test:two"}, options);
    EXPECT_TRUE(result.ok()) << result.status().message();
    return result.value();
  }();
  return c;
}

class CalibrationFileTest : public testing::ScratchDirectoryTest {};

TEST_F(CalibrationFileTest, StatisticsAddUp) {
  const ExpertCalibration& c = calibration();
  EXPECT_EQ(c.n_tokens, 600);
  ASSERT_EQ(int64_t(c.layers.size()), c.model.n_layer);
  for (int l = 0; l < int(c.layers.size()); ++l) {
    const LayerCalibration& layer = c.layers[size_t(l)];
    int64_t routed = 0;
    for (int64_t n : layer.tokens) routed += n;
    EXPECT_EQ(routed, c.n_tokens * c.model.n_expert_used);  // every token picks k experts
    for (int64_t e = 0; e < c.model.n_expert; ++e) {
      if (layer.tokens[size_t(e)] == 0) continue;
      double x2 = 0;
      for (float v : c.input_mean_square(l, int(e))) x2 += v;
      EXPECT_GT(x2, 0) << e;
      EXPECT_GT(layer.weighted_output_norm[size_t(e)], 0.0f) << e;
    }
    // Each sample's mixture weights are renormalized (qwen3moe): they sum to 1.
    for (int64_t s = 0; s < c.n_samples; ++s) {
      double sum = 0;
      for (int64_t j = 0; j < c.model.n_expert_used; ++j)
        sum += layer.sample_weights[size_t(s * c.model.n_expert_used + j)];
      EXPECT_NEAR(sum, 1.0, 1e-5) << s;
    }
  }
  EXPECT_EQ(c.model, calibrated_model(kModel).value());
}

TEST_F(CalibrationFileTest, RoundTripsThroughTheFile) {
  const ExpertCalibration& c = calibration();
  ASSERT_TRUE(write_calibration(c, path("a.calib")).ok());
  const auto read = read_calibration(path("a.calib"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  const ExpertCalibration& r = read.value();
  EXPECT_EQ(r.model, c.model);
  EXPECT_EQ(r.documents, c.documents);
  EXPECT_EQ(r.n_tokens, c.n_tokens);
  EXPECT_EQ(r.n_samples, c.n_samples);
  for (size_t l = 0; l < c.layers.size(); ++l) {
    EXPECT_EQ(r.layers[l].input_mean_square, c.layers[l].input_mean_square);
    EXPECT_EQ(r.layers[l].hidden_mean_square, c.layers[l].hidden_mean_square);
    EXPECT_EQ(r.layers[l].tokens, c.layers[l].tokens);
    EXPECT_EQ(r.layers[l].sample_picks, c.layers[l].sample_picks);
    EXPECT_EQ(r.layers[l].sample_outputs, c.layers[l].sample_outputs);
  }
}

TEST_F(CalibrationFileTest, RefusesAnotherModelAndTooLittleText) {
  const auto other = calibrated_model(kOtherModel);
  ASSERT_TRUE(other.ok());
  const Status refused =
      check_calibration_matches(calibration(), "a.calib", other.value(), kOtherModel);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(
      refused.message().rfind("a.calib: a calibration of another model than " + kOtherModel, 0), 0u)
      << refused.message();
  CalibrationOptions options;
  const auto short_text = calibrate_experts(kModel, testing::random_text(100, 2), {}, options);
  ASSERT_FALSE(short_text.ok());
  EXPECT_EQ(short_text.status().message(),
            "calibrate: the text gives 100 tokens; at least 512 are needed (4 per channel of the "
            "widest expert input, 128)");
  // A model file is not a calibration.
  const auto model = read_calibration(kModel);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("not a Strata expert calibration file"),
            std::string::npos);
}

// Every prefix of a real file, and random corruptions of its bytes (header, metadata, tensor
// infos and data alike): one error or a calibration whose every statistic passed the checks.
TEST_F(CalibrationFileTest, HostileBytesGiveOneErrorNeverACrash) {
  ASSERT_TRUE(write_calibration(calibration(), path("b.calib")).ok());
  const auto bytes = read_whole_file(path("b.calib"));
  ASSERT_TRUE(bytes.ok());
  const std::vector<uint8_t> good(bytes.value().begin(), bytes.value().end());
  int errors = 0;
  for (size_t n = 0; n < good.size(); n += std::max<size_t>(1, good.size() / 4000)) {
    const std::vector<uint8_t> prefix(good.begin(), good.begin() + long(n));
    errors += !parse_calibration(prefix, "prefix").ok();
  }
  EXPECT_GT(errors, 3000);
  std::mt19937 rng(7);
  int accepted = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> bad = good;
    const int flips = 1 + int(rng() % 4);
    // Most corruptions land in the header and metadata, where the parser has most to check.
    for (int f = 0; f < flips; ++f) {
      const size_t at = trial % 2 ? rng() % std::min<size_t>(bad.size(), 4096) : rng() % bad.size();
      bad[at] = uint8_t(rng());
    }
    const auto parsed = parse_calibration(bad, "corrupt");
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().message().find('\n'), std::string::npos);
      continue;
    }
    ++accepted;
    for (const LayerCalibration& layer : parsed.value().layers)
      for (float v : layer.input_mean_square) ASSERT_TRUE(v >= 0 && std::isfinite(v));
  }
  EXPECT_LT(accepted, 3000);
}

}  // namespace
}  // namespace strata
