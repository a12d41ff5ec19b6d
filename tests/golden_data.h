// Access to the golden reference outputs under tests/golden/ (produced by llama.cpp; see
// tests/golden/README.md) and the metrics the tolerances are stated in.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace strata::golden {

std::filesystem::path root();  // <repo>/tests/golden

struct Sequence {
  std::string name;
  std::vector<int32_t> ids;
};
// sequences.json of a golden folder ("synthetic" or "trained").
std::vector<Sequence> sequences(const std::string& folder);
// The ids of one of them; empty when the folder has no sequence of that name.
std::vector<int32_t> sequence_ids(const std::string& folder, const std::string& name);
// A model of the synthetic golden folder, by name without ".gguf".
std::string synthetic_model(const std::string& name);

std::vector<float> read_floats(const std::filesystem::path& path);
std::vector<int32_t> read_ints(const std::filesystem::path& path);

struct Comparison {
  double relative_error = 0;  // ||ours - golden|| / ||golden|| over all rows
  double mean_kld = 0;        // mean over rows of KL(golden || ours)
  double argmax_agreement = 0;
  int64_t rows = 0;
};
Comparison compare_logits(const std::vector<float>& golden, const std::vector<float>& ours,
                          int64_t n_vocab);

}  // namespace strata::golden
