// The CUDA backend against llama.cpp's golden outputs at the CPU's tolerances, against the CPU
// on strata-tiny-moe, and its determinism and errors at the command line. Every test that needs
// a GPU skips where there is none ("no CUDA device"); scripts/test-gpu runs them where there is.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "backend/cuda_backend.h"
#include "cli_runner.h"
#include "golden_cases.h"
#include "golden_data.h"
#include "model_runner.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using testing::Device;
using testing::GoldenCase;
using testing::GreedyCase;
using testing::Precision;

// The bar for strata-tiny-moe on the GPU against the CPU.
constexpr double kGpuCpuMaxMeanKld = 1e-4;

const std::string kBundled = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";

bool has_gpu() { return cuda_device_count() > 0; }

#define SKIP_WITHOUT_GPU() \
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device"

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class GpuGoldenParity : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GpuGoldenParity, LogitsMatchLlamaCpp) {
  SKIP_WITHOUT_GPU();
  const GoldenCase& c = GetParam();
  if (!fs::exists(c.model_path)) GTEST_SKIP() << "model " << c.model << " is not available here";
  testing::ModelRunner runner(c.model_path.string(), 1, Device::kCuda);
  const auto tokens = testing::sequence_ids(c);
  const auto golden_logits = golden::read_floats(c.logits_path);
  ASSERT_EQ(golden_logits.size(), tokens.size() * size_t(runner.n_vocab()));
  const auto ours = runner.logits(tokens, int64_t(tokens.size()));
  testing::expect_within_tolerances(c,
                                    golden::compare_logits(golden_logits, ours, runner.n_vocab()));
}

TEST_P(GpuGoldenParity, RoutesOfF32ModelsMatchLlamaCpp) {
  SKIP_WITHOUT_GPU();
  const GoldenCase& c = GetParam();
  if (testing::precision_of(c.model) != Precision::kF32)
    GTEST_SKIP() << "sets compared only for F32";
  if (!fs::exists(c.model_path)) GTEST_SKIP() << "model " << c.model << " is not available here";
  testing::ModelRunner runner(c.model_path.string(), 1, Device::kCuda);
  const auto golden_routes = golden::read_ints(testing::routes_path(c));
  const auto ours = runner.routes(testing::sequence_ids(c));
  ASSERT_EQ(ours.size(), golden_routes.size());
  const size_t k = size_t(runner.model().config().n_expert_used);
  for (size_t i = 0; i < ours.size(); i += k) {
    const std::set<int32_t> a(ours.begin() + ptrdiff_t(i), ours.begin() + ptrdiff_t(i + k));
    const std::set<int32_t> b(golden_routes.begin() + ptrdiff_t(i),
                              golden_routes.begin() + ptrdiff_t(i + k));
    ASSERT_EQ(a, b) << "layer/token row " << i / k;
  }
}

INSTANTIATE_TEST_SUITE_P(AllGoldenFiles, GpuGoldenParity,
                         ::testing::ValuesIn(testing::golden_cases()),
                         [](const auto& info) { return testing::case_name(info.param); });

// Greedy continuations, token by token after the prompt: decode's kernels, not prefill's.
class GpuGoldenGreedy : public ::testing::TestWithParam<GreedyCase> {};

TEST_P(GpuGoldenGreedy, F32ContinuationsMatchLlamaCpp) {
  SKIP_WITHOUT_GPU();
  const GreedyCase& c = GetParam();
  if (testing::precision_of(c.model) != Precision::kF32) GTEST_SKIP() << "exact only for F32";
  std::ifstream in(c.greedy_path);
  const auto json = nlohmann::json::parse(in);
  const auto expected = json.at("generated").get<std::vector<int32_t>>();
  testing::ModelRunner runner(c.model_path.string(), 1, Device::kCuda);
  EXPECT_EQ(runner.greedy(json.at("prompt").get<std::vector<int32_t>>(), int(expected.size())),
            expected);
}

INSTANTIATE_TEST_SUITE_P(AllGreedyFiles, GpuGoldenGreedy,
                         ::testing::ValuesIn(testing::greedy_cases()),
                         [](const auto& info) { return testing::greedy_name(info.param); });

std::vector<int32_t> synthetic_sequence(const std::string& name) {
  for (const auto& s : golden::sequences("synthetic"))
    if (s.name == name) return s.ids;
  return {};
}

// Two backends, and the same backend twice, give the same bits for each way of cutting the
// sequence into batches (decode's one token, a few, the whole prompt).
class GpuDeterminism : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuDeterminism, RepeatedRunsAreBitIdentical) {
  SKIP_WITHOUT_GPU();
  const std::string path = (golden::root() / "synthetic/models" / (GetParam() + ".gguf")).string();
  const auto tokens = synthetic_sequence("seq64_rand");
  testing::ModelRunner first(path, 1, Device::kCuda), second(path, 1, Device::kCuda);
  for (int64_t chunk : {int64_t(1), int64_t(5), int64_t(64)}) {
    const auto reference = first.logits(tokens, chunk);
    EXPECT_TRUE(bit_identical(reference, first.logits(tokens, chunk))) << "batches of " << chunk;
    EXPECT_TRUE(bit_identical(reference, second.logits(tokens, chunk))) << "batches of " << chunk;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, GpuDeterminism,
                         ::testing::Values("tiny-qwen3moe-f32", "tiny-qwen3moe-q4_0",
                                           "tiny-qwen3moe-q8_0", "tiny-qwen3moe-k256-q4_k_m",
                                           "tiny-qwen2moe-iq4_nl"));

// The bundled model on the GPU against the CPU, teacher-forced over the trained golden windows.
TEST(GpuVsCpu, BundledModelMeanKldIsBelowTheBar) {
  SKIP_WITHOUT_GPU();
  testing::ModelRunner cpu(kBundled, 2), gpu(kBundled, 1, Device::kCuda);
  for (const auto& s : golden::sequences("trained")) {
    const auto expected = cpu.logits(s.ids, int64_t(s.ids.size()));
    const auto m =
        golden::compare_logits(expected, gpu.logits(s.ids, int64_t(s.ids.size())), cpu.n_vocab());
    std::printf("  %-10s gpu vs cpu: rel %.3e  kld %.3e  argmax %.4f\n", s.name.c_str(),
                m.relative_error, m.mean_kld, m.argmax_agreement);
    EXPECT_LE(m.mean_kld, kGpuCpuMaxMeanKld) << s.name;
  }
}

TEST(GpuCli, WithoutADeviceCudaIsRefusedInOneLine) {
  if (has_gpu()) GTEST_SKIP() << "a CUDA device is present";
  const auto outcome = testing::strata("run -m " + kBundled + " -p hi -n 2 --device cuda");
  EXPECT_EQ(outcome.exit_code, 1);
  const std::string line = testing::last_line(outcome.err);
  EXPECT_EQ(line.rfind("strata: --device cuda: ", 0), 0u) << outcome.err;
  EXPECT_EQ(outcome.out, "");
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(GpuCli, LogitsDoNotDependOnThreads) {
  SKIP_WITHOUT_GPU();
  const fs::path tokens = testing::scratch() / "gpu-tokens.json";
  std::ofstream(tokens) << "[1, 200, 3000, 17, 5, 99, 1024, 8]";
  std::string outputs[2];
  for (int i = 0; i < 2; ++i) {
    const fs::path out = testing::scratch() / ("gpu-logits-" + std::to_string(i) + ".bin");
    const auto outcome = testing::strata("logits -m " + kBundled + " --device cuda --threads " +
                                         std::to_string(1 + 3 * i) + " --tokens " +
                                         tokens.string() + " --out " + out.string());
    ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
    outputs[i] = file_bytes(out);
  }
  EXPECT_FALSE(outputs[0].empty());
  EXPECT_EQ(outputs[0], outputs[1]);
}

TEST(GpuCli, GeneratesAndRefusesInOneLine) {
  SKIP_WITHOUT_GPU();
  const auto run =
      testing::strata("run -m " + kBundled + " -p 'def fib(n):' -n 16 --temp 0 --device cuda");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_GT(run.out.size(), std::string("def fib(n):").size());
  const std::pair<std::string, std::string> cases[] = {
      {"run -m " + kBundled + " -p hi --device cuda --gpu 99", "--gpu 99: this machine has "},
      {"run -m " + kBundled + " -p hi --device cuda --ctx 1000000", "cuda: a context of 1000000"},
      {"run -m " + kBundled + " -p hi --device cuda --arena 50%", "an expert arena"},
  };
  for (const auto& [arguments, expected] : cases) {
    const auto outcome = testing::strata(arguments);
    EXPECT_EQ(outcome.exit_code, 1) << arguments;
    const std::string line = testing::last_line(outcome.err);
    EXPECT_EQ(line.rfind("strata: ", 0), 0u) << arguments << "\n" << outcome.err;
    EXPECT_NE(line.find(expected), std::string::npos) << arguments << "\n" << line;
  }
}

}  // namespace
}  // namespace strata
