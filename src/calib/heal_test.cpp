// Healing on the golden synthetic qwen3moe with Q2_0 experts: the chosen scales lower the
// held-out error, only the down projections' scales change, and models it cannot heal are
// refused with one line.
#include "calib/heal.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "calib/calib_test_support.h"
#include "model/model_file_test_support.h"
#include "model/requantize.h"

namespace strata {
namespace {

using testing::golden_synthetic;

const std::string kModel = golden_synthetic("models/tiny-qwen3moe-f32.gguf");

class HealTest : public testing::ScratchDirectoryTest {
 protected:
  static ExpertCalibration calibrate() {
    return testing::calibrate_on_random_text(kModel, 800, 3, 64);
  }
  std::string quantize(QuantType type) {
    const std::string out = path(std::string(quant_traits(type).name) + ".gguf");
    RequantizeOptions options;
    options.expert_type = type;
    EXPECT_TRUE(requantize_model_file(kModel, out, options).ok());
    return out;
  }
};

TEST_F(HealTest, LowersTheHeldOutErrorAndChangesOnlyDownScales) {
  const ExpertCalibration calibration = calibrate();
  const std::string q2 = quantize(QuantType::kQ2_0);
  const auto heals = heal_model_file(q2, calibration, "test.calib", path("healed.gguf"), {});
  ASSERT_TRUE(heals.ok()) << heals.status().message();
  int healed_layers = 0;
  for (const LayerHeal& h : heals.value()) {
    const double chosen = h.held_out_error[int(h.choice)];
    EXPECT_LE(chosen, h.held_out_error[0]);
    healed_layers += chosen < h.held_out_error[0];
  }
  EXPECT_GT(healed_layers, 0);  // Q2_0 shrinks outputs: some layer gains from a scale
  const auto before = gguf::GgufFile::open(q2).value();
  const auto after = gguf::GgufFile::open(path("healed.gguf")).value();
  ASSERT_EQ(before->tensors().size(), after->tensors().size());
  for (size_t i = 0; i < before->tensors().size(); ++i) {
    const auto& a = before->tensors()[i];
    const auto& b = after->tensors()[i];
    const uint8_t* x = before->tensor_data(a);
    const uint8_t* y = after->tensor_data(b);
    if (!a.name.ends_with("ffn_down_exps.weight")) {
      EXPECT_EQ(std::memcmp(x, y, a.n_bytes), 0) << a.name;
      continue;
    }
    for (size_t block = 0; block < a.n_bytes / 18; ++block)  // codes kept, scales may change
      EXPECT_EQ(std::memcmp(x + block * 18 + 2, y + block * 18 + 2, 16), 0) << a.name;
  }
  EXPECT_TRUE(after->has("strata.heal"));
}

TEST_F(HealTest, RefusesOtherFormatsAndOtherModels) {
  const ExpertCalibration calibration = calibrate();
  const std::string q4 = quantize(QuantType::kQ4_0);
  const auto refused = heal_model_file(q4, calibration, "test.calib", path("out.gguf"), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            q4 + ": heal folds its scales into Q2_0 down projections; these experts are q4_0 "
                 "(strata quantize --experts q2_0 first)");
  const std::string other = golden_synthetic("models/tiny-qwen2moe-f32.gguf");
  const auto wrong = heal_model_file(other, calibration, "test.calib", path("out.gguf"), {});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message().rfind("test.calib: a calibration of another model than ", 0),
            0u)
      << wrong.status().message();
}

}  // namespace
}  // namespace strata
