// Logits are a function of (model, tokens) alone: identical bits whatever the thread count and
// however the sequence is cut into batches (DESIGN.md §3, "Determinism").
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "golden_data.h"
#include "model_runner.h"

namespace strata {
namespace {

std::vector<int32_t> sequence(const std::string& name) {
  for (const auto& s : golden::sequences("synthetic"))
    if (s.name == name) return s.ids;
  return {};
}

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class Determinism : public ::testing::TestWithParam<std::string> {};

TEST_P(Determinism, SameBitsForEveryThreadCountAndBatching) {
  const std::string path = (golden::root() / "synthetic/models" / (GetParam() + ".gguf")).string();
  const auto tokens = sequence("seq64_rand");
  testing::ModelRunner reference_runner(path, 1);
  const auto reference = reference_runner.logits(tokens, int64_t(tokens.size()));
  for (int threads : {1, 2, 3}) {
    testing::ModelRunner runner(path, threads);
    for (int64_t chunk : {int64_t(1), int64_t(3), int64_t(5), int64_t(64)})
      EXPECT_TRUE(bit_identical(reference, runner.logits(tokens, chunk)))
          << threads << " threads, batches of " << chunk;
  }
}

// A prompt long and wide enough that the row-wise ops (norms, RoPE, routing, mixing) split into
// ranges over the threads: the bundled model, 384 wide, 320 tokens in one batch.
TEST(Determinism, RangesOfRowsGiveTheRowByRowBits) {
  const std::string path = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";
  std::mt19937 random(7);
  std::vector<int32_t> tokens(320);
  for (int32_t& token : tokens) token = int32_t(random() % 16384);
  testing::ModelRunner reference_runner(path, 1);
  const auto reference = reference_runner.logits(tokens, 1);
  for (int threads : {1, 2, 5}) {
    testing::ModelRunner runner(path, threads);
    for (int64_t chunk : {int64_t(320), int64_t(100)})
      EXPECT_TRUE(bit_identical(reference, runner.logits(tokens, chunk)))
          << threads << " threads, batches of " << chunk;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Determinism,
                         ::testing::Values("tiny-qwen3moe-f32", "tiny-qwen3moe-q4_0",
                                           "tiny-qwen3moe-q8_0", "tiny-qwen3moe-k256-q4_k_m",
                                           "tiny-qwen2moe-iq4_nl"));

}  // namespace
}  // namespace strata
