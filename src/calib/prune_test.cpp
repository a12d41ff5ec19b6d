// Pruning the golden synthetic qwen3moe (16 experts, top-4) to 12: the kept experts are the most
// salient, their slices and router rows are the input's bytes, every other tensor is copied, the
// file loads as a model of 6 experts and runs; --keep outside the model's range is refused.
#include "calib/prune.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include <fmt/format.h>
#include <algorithm>
#include <filesystem>

#include "calib/calib_test_support.h"
#include "model/model_file_test_support.h"

namespace strata {
namespace {

using testing::golden_synthetic;

const std::string kModel = golden_synthetic("models/tiny-qwen3moe-q8_0.gguf");

class PruneTest : public testing::ScratchDirectoryTest {
 protected:
  static ExpertCalibration calibrate() {
    return testing::calibrate_on_random_text(kModel, 600, 5, 8);
  }
};

TEST_F(PruneTest, KeepsTheMostSalientExpertsBytesAndAll) {
  const ExpertCalibration c = calibrate();
  PruneOptions options;
  options.keep = 12;
  const auto summary = prune_model_file(kModel, c, "test.calib", path("pruned.gguf"), options);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  for (size_t l = 0; l < c.layers.size(); ++l) {
    const auto& kept = summary.value().kept[l];
    ASSERT_EQ(kept.size(), 12u);
    // Every dropped expert carried no more of the layer's output than any kept one.
    const auto total = [&](int32_t e) {
      return double(c.layers[l].weighted_output_norm[size_t(e)]) *
             double(c.layers[l].tokens[size_t(e)]);
    };
    double least_kept = INFINITY;
    for (int32_t e : kept) least_kept = std::min(least_kept, total(e));
    for (int32_t e = 0; e < 16; ++e) {
      if (std::find(kept.begin(), kept.end(), e) == kept.end()) {
        EXPECT_LE(total(e), least_kept);
      }
    }
  }
  const auto input = testing::open_gguf(kModel);
  const auto output = testing::open_gguf(path("pruned.gguf"));
  ASSERT_TRUE(input && output);
  EXPECT_EQ(output->get_uint("qwen3moe.expert_count").value(), 12u);
  ASSERT_EQ(input->tensors().size(), output->tensors().size());
  for (size_t i = 0; i < input->tensors().size(); ++i) {
    const gguf::TensorInfo& a = input->tensors()[i];
    const gguf::TensorInfo& b = output->tensors()[i];
    const bool per_expert =
        a.name.find("_exps.") != std::string::npos || a.name.ends_with("ffn_gate_inp.weight");
    if (!per_expert) {
      EXPECT_EQ(a.shape, b.shape) << a.name;
      EXPECT_EQ(std::memcmp(input->tensor_data(a), output->tensor_data(b), a.n_bytes), 0) << a.name;
      continue;
    }
    EXPECT_EQ(b.shape.back(), 12) << a.name;
    const int layer = std::stoi(a.name.substr(4));
    const size_t piece = a.n_bytes / 16;
    for (size_t k = 0; k < 12; ++k) {
      const int32_t e = summary.value().kept[size_t(layer)][k];
      EXPECT_EQ(std::memcmp(input->tensor_data(a) + size_t(e) * piece,
                            output->tensor_data(b) + k * piece, piece),
                0)
          << a.name << " expert " << e;
    }
  }
  const auto logits = testing::resident_logits(path("pruned.gguf"), {1, 2, 3, 4, 5, 6, 7, 8});
  ASSERT_FALSE(logits.empty());
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

TEST_F(PruneTest, RefusesAKeepOutsideTheModel) {
  const ExpertCalibration c = calibrate();
  for (const int64_t keep : {int64_t(17), int64_t(3)}) {
    PruneOptions options;
    options.keep = keep;
    const auto refused = prune_model_file(kModel, c, "test.calib", path("out.gguf"), options);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().message(),
              fmt::format("{}: --keep {} is outside 4..16 (the experts each token uses .. the "
                          "layer's experts)",
                          kModel, keep));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

}  // namespace
}  // namespace strata
