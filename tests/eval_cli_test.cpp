// `strata eval` checked against an independent computation: the reference's and the
// candidate's logits are dumped with `strata logits` for every window of a suite, and KLD,
// top-1 agreement and both perplexities are recomputed here, in plain double-precision code
// that shares nothing with src/eval, then compared with what `strata eval run` reports.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

using testing::strata;

const std::string kModels = std::string(STRATA_SOURCE_DIR) + "/tests/golden/synthetic/models/";
const std::string kCandidate = kModels + "tiny-qwen3moe-q4_0.gguf";
const std::string kReference = kModels + "tiny-qwen3moe-q8_0.gguf";
constexpr int64_t kPrompt = 6, kScored = 10;

// Writes prose.jsonl into `dir`; returns each document's text by id.
std::map<std::string, std::string> write_documents(const fs::path& dir) {
  const char* sentences[] = {
      "The quick brown fox jumps over the lazy dog near the river bank. ",
      "A small boat drifted slowly past the old mill while the children watched. ",
      "Every morning the baker opened his shop before the sun was up. ",
      "Rain fell on the roofs of the town through the whole of the long night. "};
  std::map<std::string, std::string> texts;
  std::ofstream out(dir / "prose.jsonl");
  for (int d = 0; d < 3; ++d) {
    std::string text;
    for (int i = 0; i < 8; ++i) text += sentences[(d + i) % 4];
    const std::string id = std::string("p").append(std::to_string(d));
    out << nlohmann::json{{"id", id}, {"domain", "prose"}, {"text", text}}.dump() << "\n";
    texts[id] = text;
  }
  return texts;
}

// The document's tokens as `strata tokenize` gives them.
std::vector<int32_t> tokenize(const std::string& text, const fs::path& scratch_file) {
  std::ofstream(scratch_file, std::ios::binary) << text;
  const auto outcome = strata("tokenize -m " + kCandidate + " -f " + scratch_file.string());
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  return nlohmann::json::parse(outcome.out).get<std::vector<int32_t>>();
}

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> values(fs::file_size(path) / sizeof(float));
  in.read(reinterpret_cast<char*>(values.data()), std::streamsize(values.size() * sizeof(float)));
  return values;
}

std::vector<double> log_probs(const float* logits, int64_t n) {
  const double top = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - top);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = double(logits[i]) - top - std::log(sum);
  return out;
}

struct Totals {
  double kld = 0, ref_nll = 0, cand_nll = 0;
  int64_t top1 = 0, positions = 0;

  Totals& operator+=(const Totals& other) {
    kld += other.kld;
    ref_nll += other.ref_nll;
    cand_nll += other.cand_nll;
    top1 += other.top1;
    positions += other.positions;
    return *this;
  }
};

// The sums over a window's scored positions, from the two dumps' rows. Row r of a dump is the
// logits after the window's token r; its next token is r + 1.
Totals score_window(const std::vector<float>& ref, const std::vector<float>& cand,
                    const std::vector<int32_t>& window_tokens, int64_t n_vocab) {
  Totals window;
  for (int64_t j = 0; j < kScored; ++j) {
    const int64_t row = kPrompt - 1 + j;
    const auto p = log_probs(ref.data() + row * n_vocab, n_vocab);
    const auto q = log_probs(cand.data() + row * n_vocab, n_vocab);
    for (size_t v = 0; v < p.size(); ++v) window.kld += std::exp(p[v]) * (p[v] - q[v]);
    window.top1 += std::max_element(p.begin(), p.end()) - p.begin() ==
                   std::max_element(q.begin(), q.end()) - q.begin();
    const auto next = size_t(window_tokens[size_t(row + 1)]);
    window.ref_nll -= p[next];
    window.cand_nll -= q[next];
    ++window.positions;
  }
  return window;
}

TEST(EvalCli, NumbersEqualAnIndependentComputationFromLogitsDumps) {
  const fs::path dir = testing::scratch() / "eval";
  fs::remove_all(dir);
  fs::create_directories(dir / "docs");
  const auto texts = write_documents(dir / "docs");
  const std::string suite = (dir / "suite.json").string();
  auto outcome = strata("eval make-suite --eval-dir " + (dir / "docs").string() + " --vocab " +
                        kCandidate + " --windows 4 --prompt " + std::to_string(kPrompt) +
                        " --scored " + std::to_string(kScored) + " --seed 7 -o " + suite);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const fs::path ref_dir = dir / "reference", cand_dir = dir / "candidate";
  for (const fs::path& d : {ref_dir, cand_dir}) {
    outcome = strata("eval tokens --suite " + suite + " -o " + d.string());
    ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  }
  std::ifstream suite_in(suite);
  const auto windows = nlohmann::json::parse(suite_in).at("windows");
  ASSERT_EQ(windows.size(), 4u);
  for (const auto& w : windows) {
    const std::string id = w.at("id");
    for (const auto& [d, model] :
         {std::pair{ref_dir, kReference}, std::pair{cand_dir, kCandidate}}) {
      outcome =
          strata("logits -m " + model + " -t 2 --tokens " + (d / (id + ".tokens.json")).string() +
                 " --out " + (d / (id + ".logits.bin")).string());
      ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
    }
  }
  const std::string record = (dir / "run.json").string();
  outcome = strata("eval run --suite " + suite + " -m " + kCandidate +
                   " -t 2 --batch --ref-logits " + ref_dir.string() + " -o " + record);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  std::ifstream record_in(record);
  const auto result = nlohmann::json::parse(record_in);
  const int64_t n_vocab = result.at("n_vocab");

  Totals all;
  for (size_t i = 0; i < windows.size(); ++i) {
    const std::string id = windows[i].at("id");
    const std::vector<int32_t> document =
        tokenize(texts.at(windows[i].at("document")), dir / "document.txt");
    const int64_t start = windows[i].at("start");
    ASSERT_LE(start + kPrompt + kScored, int64_t(document.size()));
    const std::vector<int32_t> window_tokens(document.begin() + start,
                                             document.begin() + start + kPrompt + kScored);
    const std::vector<float> ref = read_floats(ref_dir / (id + ".logits.bin"));
    const std::vector<float> cand = read_floats(cand_dir / (id + ".logits.bin"));
    ASSERT_EQ(int64_t(ref.size()), (kPrompt + kScored - 1) * n_vocab);
    ASSERT_EQ(cand.size(), ref.size());
    const Totals window = score_window(ref, cand, window_tokens, n_vocab);
    const auto& reported = result.at("windows")[i];
    ASSERT_EQ(reported.at("id"), id);
    EXPECT_NEAR(reported.at("kld_sum").get<double>(), window.kld, 1e-9 + 1e-6 * window.kld) << id;
    EXPECT_EQ(reported.at("top1_count").get<int64_t>(), window.top1) << id;
    EXPECT_NEAR(reported.at("ref_nll_sum").get<double>(), window.ref_nll, 1e-6 * window.ref_nll)
        << id;
    EXPECT_NEAR(reported.at("cand_nll_sum").get<double>(), window.cand_nll, 1e-6 * window.cand_nll)
        << id;
    all += window;
  }
  const auto& pooled = result.at("groups").back();
  ASSERT_EQ(pooled.at("name"), "all");
  EXPECT_EQ(pooled.at("positions").get<int64_t>(), all.positions);
  EXPECT_NEAR(pooled.at("kld_mean").get<double>(), all.kld / double(all.positions),
              1e-6 * all.kld / double(all.positions));
  EXPECT_DOUBLE_EQ(pooled.at("top1_agreement").get<double>(),
                   double(all.top1) / double(all.positions));
  const double ppl_ref = std::exp(all.ref_nll / double(all.positions));
  const double ppl_cand = std::exp(all.cand_nll / double(all.positions));
  EXPECT_NEAR(pooled.at("ppl_ref").get<double>(), ppl_ref, 1e-6 * ppl_ref);
  EXPECT_NEAR(pooled.at("ppl_cand").get<double>(), ppl_cand, 1e-6 * ppl_cand);
  EXPECT_GT(pooled.at("kld_mean").get<double>(), 0);  // Q4_0 against Q8_0 is not exact
}

// A suite names its sources' directory relative to itself: made from one directory, it runs
// from any other, and moved with its documents it still finds them. When they are missing, the
// error says where it looked.
TEST(EvalCli, SuiteFindsItsSourcesBesideItFromAnyDirectory) {
  const fs::path dir = testing::scratch() / "eval-relative", moved = dir.string() + "-moved";
  fs::remove_all(dir);
  fs::remove_all(moved);
  fs::create_directories(dir / "docs");
  write_documents(dir / "docs");
  const std::string docs = fs::relative(dir / "docs", fs::current_path()).string();
  auto outcome =
      strata("eval make-suite --eval-dir " + docs + " --vocab " + kCandidate +
             " --windows 2 --prompt 6 --scored 10 --seed 7 -o " + (dir / "suite.json").string());
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  std::ifstream suite_in(dir / "suite.json");
  EXPECT_EQ(nlohmann::json::parse(suite_in).at("eval_dir"), "docs");
  fs::rename(dir, moved);
  const std::string tokens = "eval tokens --suite " + (moved / "suite.json").string() + " -o ";
  const fs::path here = fs::current_path();
  fs::current_path("/");  // the command runs from another directory than make-suite did
  outcome = strata(tokens + (moved / "tokens").string());
  fs::current_path(here);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_TRUE(fs::exists(moved / "tokens" / "prose-000.tokens.json"));
  fs::remove(moved / "docs" / "prose.jsonl");
  outcome = strata(tokens + (moved / "tokens-again").string());
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_NE(testing::last_line(outcome.err)
                .find((moved / "docs" / "prose.jsonl").string() +
                      ": missing: the suite's windows come from it (looked for in " +
                      (moved / "docs").string() + ";"),
            std::string::npos)
      << outcome.err;
  fs::remove_all(moved);
}

}  // namespace
}  // namespace strata
