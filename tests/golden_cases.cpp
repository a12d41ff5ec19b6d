#include "golden_cases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

// Golden folders of the trained model: the repository's copy, then ../shared for the rest.
std::vector<fs::path> trained_dirs() {
  std::vector<fs::path> dirs = {golden::root() / "trained"};
  if (fs::exists(shared_root() / "golden/trained"))
    dirs.push_back(shared_root() / "golden/trained");
  return dirs;
}

// Files named *suffix in `dirs`, the first folder winning when a name repeats.
std::vector<fs::path> files_ending(const std::vector<fs::path>& dirs, const std::string& suffix) {
  std::vector<fs::path> files;
  std::set<std::string> seen;
  for (const auto& dir : dirs)
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.ends_with(suffix) && seen.insert(name).second) files.push_back(entry.path());
    }
  return files;
}

fs::path model_path(const std::string& folder, const std::string& model) {
  if (folder == "synthetic") return golden::root() / "synthetic/models" / (model + ".gguf");
  const fs::path bundled = fs::path(STRATA_SOURCE_DIR) / "models" / (model + ".gguf");
  if (fs::exists(bundled)) return bundled;
  return shared_root() / "models" / (model + ".gguf");
}

std::string identifier(std::string name) {
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

}  // namespace

// The larger Q8_0 reference model and its golden files are not copied into the repository;
// they are read from ../shared when it exists.
fs::path shared_root() { return fs::path(STRATA_SOURCE_DIR) / "../shared"; }

Precision precision_of(const std::string& model) {
  if (model.ends_with("-f32")) return Precision::kF32;
  if (model.ends_with("-f16")) return Precision::kF16;
  return Precision::kQuantized;
}

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  for (const std::string folder : {"synthetic", "trained"}) {
    const auto dirs = folder == "synthetic"
                          ? std::vector<fs::path>{golden::root() / "synthetic/logits"}
                          : trained_dirs();
    for (const fs::path& path : files_ending(dirs, ".logits.bin")) {
      const std::string name = path.filename().string();
      const std::string stem = name.substr(0, name.size() - std::string(".logits.bin").size());
      const size_t dot = stem.rfind('.');
      const std::string model = stem.substr(0, dot);
      cases.push_back({folder, model, stem.substr(dot + 1), model_path(folder, model), path});
    }
  }
  std::sort(cases.begin(), cases.end(), [](const GoldenCase& a, const GoldenCase& b) {
    return a.model + a.sequence < b.model + b.sequence;
  });
  return cases;
}

std::vector<int32_t> sequence_ids(const GoldenCase& c) {
  for (const auto& s : golden::sequences(c.folder))
    if (s.name == c.sequence) return s.ids;
  ADD_FAILURE() << "no sequence " << c.sequence;
  return {};
}

fs::path routes_path(const GoldenCase& c) {
  return golden::root() / "synthetic/routes" / (c.model + "." + c.sequence + ".route.bin");
}

std::vector<GreedyCase> greedy_cases() {
  std::vector<GreedyCase> cases;
  for (const auto& entry : fs::directory_iterator(golden::root() / "synthetic/greedy")) {
    const std::string name = entry.path().filename().string();
    const std::string model = name.substr(0, name.find(".greedy32.json"));
    cases.push_back({model, model_path("synthetic", model), entry.path()});
  }
  for (const fs::path& path : files_ending(trained_dirs(), ".greedy32.json")) {
    const std::string name = path.filename().string();
    const std::string model = name.substr(0, name.find('.'));
    cases.push_back({model, model_path("trained", model), path});
  }
  std::sort(cases.begin(), cases.end(),
            [](const GreedyCase& a, const GreedyCase& b) { return a.greedy_path < b.greedy_path; });
  return cases;
}

void expect_within_tolerances(const GoldenCase& c, const golden::Comparison& m) {
  ::testing::Test::RecordProperty("relative_error", std::to_string(m.relative_error));
  ::testing::Test::RecordProperty("mean_kld", std::to_string(m.mean_kld));
  std::printf("  %-32s %-10s rel %.3e  kld %.3e  argmax %.4f\n", c.model.c_str(),
              c.sequence.c_str(), m.relative_error, m.mean_kld, m.argmax_agreement);
  switch (precision_of(c.model)) {
    case Precision::kF32:
      EXPECT_LE(m.relative_error, kF32MaxRelativeError);
      EXPECT_EQ(m.argmax_agreement, 1.0);
      break;
    case Precision::kF16:
      EXPECT_LE(m.relative_error, kF16MaxRelativeError);
      EXPECT_LE(m.mean_kld, kF16MaxMeanKld);
      EXPECT_EQ(m.argmax_agreement, 1.0);
      break;
    case Precision::kQuantized:
      EXPECT_LE(m.mean_kld, kQuantizedMaxMeanKld);
      EXPECT_GE(m.argmax_agreement, kQuantizedMinArgmaxAgreement);
      break;
  }
}

std::string case_name(const GoldenCase& c) { return identifier(c.model + "_" + c.sequence); }
std::string greedy_name(const GreedyCase& c) {
  return identifier(c.greedy_path.filename().string());
}

}  // namespace strata::testing
