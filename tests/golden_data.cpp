#include "golden_data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace strata::golden {

std::filesystem::path root() { return std::filesystem::path(STRATA_SOURCE_DIR) / "tests/golden"; }

std::vector<int32_t> sequence_ids(const std::string& folder, const std::string& name) {
  for (const Sequence& s : sequences(folder))
    if (s.name == name) return s.ids;
  return {};
}

std::string synthetic_model(const std::string& name) {
  return (root() / "synthetic/models" / (name + ".gguf")).string();
}

std::vector<Sequence> sequences(const std::string& folder) {
  std::ifstream in(root() / folder / "sequences.json");
  const auto json = nlohmann::json::parse(in);
  std::vector<Sequence> result;
  for (const auto& [name, value] : json.items()) {
    const auto& ids = value.is_array() ? value : value.at("ids");
    result.push_back({name, ids.get<std::vector<int32_t>>()});
  }
  return result;
}

template <class T>
static std::vector<T> read_array(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  in.seekg(0, std::ios::end);
  std::vector<T> values(size_t(in.tellg()) / sizeof(T));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()), std::streamsize(values.size() * sizeof(T)));
  return values;
}

std::vector<float> read_floats(const std::filesystem::path& path) {
  return read_array<float>(path);
}
std::vector<int32_t> read_ints(const std::filesystem::path& path) {
  return read_array<int32_t>(path);
}

static std::vector<double> log_softmax(const float* logits, int64_t n) {
  const double max = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - max);
  const double log_sum = std::log(sum) + max;
  std::vector<double> result(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) result[size_t(i)] = double(logits[i]) - log_sum;
  return result;
}

Comparison compare_logits(const std::vector<float>& golden, const std::vector<float>& ours,
                          int64_t n_vocab) {
  Comparison c;
  c.rows = int64_t(golden.size()) / n_vocab;
  double diff2 = 0, norm2 = 0, kld = 0;
  int64_t agree = 0;
  for (int64_t r = 0; r < c.rows; ++r) {
    const float* g = golden.data() + r * n_vocab;
    const float* o = ours.data() + r * n_vocab;
    for (int64_t i = 0; i < n_vocab; ++i) {
      diff2 += (double(o[i]) - g[i]) * (double(o[i]) - g[i]);
      norm2 += double(g[i]) * g[i];
    }
    const auto log_g = log_softmax(g, n_vocab), log_o = log_softmax(o, n_vocab);
    for (int64_t i = 0; i < n_vocab; ++i)
      kld += std::exp(log_g[size_t(i)]) * (log_g[size_t(i)] - log_o[size_t(i)]);
    agree += std::max_element(g, g + n_vocab) - g == std::max_element(o, o + n_vocab) - o;
  }
  c.relative_error = std::sqrt(diff2 / norm2);
  c.mean_kld = kld / double(c.rows);
  c.argmax_agreement = double(agree) / double(c.rows);
  return c;
}

}  // namespace strata::golden
