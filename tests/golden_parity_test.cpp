// Parity with llama.cpp: every model and sequence in tests/golden/ at the tolerances of
// tests/golden/README.md, the routes of the F32 models, and greedy continuations.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "golden_cases.h"
#include "golden_data.h"
#include "model_runner.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using testing::GoldenCase;
using testing::GreedyCase;
using testing::Precision;

class GoldenParity : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenParity, LogitsMatchLlamaCpp) {
  const GoldenCase& c = GetParam();
  if (!fs::exists(c.model_path))
    GTEST_SKIP() << "model " << c.model << " is not available here (" << c.model_path << ")";
  testing::ModelRunner runner(c.model_path.string());
  const auto tokens = testing::sequence_ids(c);
  const auto golden_logits = golden::read_floats(c.logits_path);
  ASSERT_EQ(golden_logits.size(), tokens.size() * size_t(runner.n_vocab()));

  // llama.cpp ran the whole sequence as one batch; so do we.
  const auto ours = runner.logits(tokens, int64_t(tokens.size()));
  testing::expect_within_tolerances(c,
                                    golden::compare_logits(golden_logits, ours, runner.n_vocab()));
}

TEST_P(GoldenParity, RoutesOfF32ModelsMatchLlamaCpp) {
  const GoldenCase& c = GetParam();
  if (testing::precision_of(c.model) != Precision::kF32)
    GTEST_SKIP() << "sets compared only for F32";
  if (!fs::exists(c.model_path)) GTEST_SKIP() << "model " << c.model << " is not available here";
  testing::ModelRunner runner(c.model_path.string());
  const auto tokens = testing::sequence_ids(c);
  const auto golden_routes = golden::read_ints(testing::routes_path(c));
  const auto ours = runner.routes(tokens);
  ASSERT_EQ(ours.size(), golden_routes.size());
  const size_t k = size_t(runner.model().config().n_expert_used);
  for (size_t i = 0; i < ours.size(); i += k) {
    const std::set<int32_t> a(ours.begin() + ptrdiff_t(i), ours.begin() + ptrdiff_t(i + k));
    const std::set<int32_t> b(golden_routes.begin() + ptrdiff_t(i),
                              golden_routes.begin() + ptrdiff_t(i + k));
    ASSERT_EQ(a, b) << "layer/token row " << i / k;
  }
}

INSTANTIATE_TEST_SUITE_P(AllGoldenFiles, GoldenParity, ::testing::ValuesIn(testing::golden_cases()),
                         [](const auto& info) { return testing::case_name(info.param); });

// Greedy continuations of seq16_en (synthetic) and of the trained model's dev_code window.
class GoldenGreedy : public ::testing::TestWithParam<GreedyCase> {};

TEST_P(GoldenGreedy, ContinuationMatchesLlamaCpp) {
  const GreedyCase& c = GetParam();
  if (!fs::exists(c.model_path)) GTEST_SKIP() << "model " << c.model << " is not available here";
  std::ifstream in(c.greedy_path);
  const auto json = nlohmann::json::parse(in);
  const auto prompt = json.at("prompt").get<std::vector<int32_t>>();
  const auto expected = json.at("generated").get<std::vector<int32_t>>();
  testing::ModelRunner runner(c.model_path.string());
  const auto ours = runner.greedy(prompt, int(expected.size()));
  size_t same = 0;
  while (same < ours.size() && ours[same] == expected[same]) ++same;
  std::printf("  %-32s greedy: %zu of %zu tokens equal before the first difference\n",
              c.model.c_str(), same, expected.size());
  // F32 must be exact (the bar). Quantized models can flip at a near-tie, after which
  // the continuations differ; the logits test above bounds how close they are.
  if (testing::precision_of(c.model) == Precision::kF32) {
    EXPECT_EQ(ours, expected);
  }
}

TEST(SharedReference, Q8ModelAvailable) {
  if (!fs::exists(testing::shared_root() / "models/strata-tiny-moe-q8_0.gguf"))
    GTEST_SKIP() << "../shared/models/strata-tiny-moe-q8_0.gguf is not here: the Q8_0 reference "
                    "model's parity checks did not run";
}

INSTANTIATE_TEST_SUITE_P(AllGreedyFiles, GoldenGreedy, ::testing::ValuesIn(testing::greedy_cases()),
                         [](const auto& info) { return testing::greedy_name(info.param); });

}  // namespace
}  // namespace strata
