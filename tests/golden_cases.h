// The cases of the parity tests against llama.cpp (tests/golden/README.md), for every backend:
// one per golden logits file and one per greedy continuation, with the tolerances they are
// held to.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "golden_data.h"

namespace strata::testing {

// Tolerances from tests/golden/README.md ("what matches means"). llama.cpp quantizes
// activations to 8 bits inside quantized dot products, as we do, so quantized models should
// land well inside them.
inline constexpr double kF32MaxRelativeError = 1e-4;
inline constexpr double kF16MaxRelativeError = 2e-3;
inline constexpr double kF16MaxMeanKld = 1e-5;
inline constexpr double kQuantizedMaxMeanKld = 1e-3;
inline constexpr double kQuantizedMinArgmaxAgreement = 0.97;

enum class Precision { kF32, kF16, kQuantized };
Precision precision_of(const std::string& model);

struct GoldenCase {
  std::string folder;  // "synthetic" or "trained"
  std::string model;   // file stem
  std::string sequence;
  std::filesystem::path model_path, logits_path;
};
std::vector<GoldenCase> golden_cases();
std::vector<int32_t> sequence_ids(const GoldenCase& c);
// The routes file of a synthetic case.
std::filesystem::path routes_path(const GoldenCase& c);

struct GreedyCase {
  std::string model;
  std::filesystem::path model_path, greedy_path;
};
std::vector<GreedyCase> greedy_cases();

// ../shared, where the larger reference models live when it exists.
std::filesystem::path shared_root();

// EXPECTs the comparison within the case's tolerances (and prints it).
void expect_within_tolerances(const GoldenCase& c, const golden::Comparison& m);

std::string case_name(const GoldenCase& c);
std::string greedy_name(const GreedyCase& c);

}  // namespace strata::testing
