#include "runtime/expert_usage.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>

#include "base/atomic_file.h"
#include "base/json_field.h"
#include "base/whole_file.h"

namespace strata {

ExpertUsage::ExpertUsage(int n_layer, int n_expert)
    : n_layer_(n_layer), n_expert_(n_expert), counts_(size_t(n_layer) * size_t(n_expert), 0) {}

Result<ExpertUsage> ExpertUsage::load(const std::string& path, int n_layer, int n_expert) {
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_whole_file(path));
  return parse(text, path, n_layer, n_expert);
}

Result<ExpertUsage> ExpertUsage::parse(std::string_view text, const std::string& name, int n_layer,
                                       int n_expert) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || json_field<std::string>(json, "format") != "strata-expert-usage")
    return Status::errorf("{}: not a strata expert-usage file", name);
  const std::optional<int> file_layers = json_field<int>(json, "n_layer");
  const std::optional<int> file_experts = json_field<int>(json, "n_expert");
  if (!file_layers || !file_experts)
    return Status::errorf("{}: n_layer and n_expert must be integers", name);
  if (*file_layers != n_layer || *file_experts != n_expert)
    return Status::errorf("{}: made for {} layers x {} experts, this model has {} x {}", name,
                          *file_layers, *file_experts, n_layer, n_expert);
  ExpertUsage usage(n_layer, n_expert);
  const nlohmann::json* counts = json_member(json, "counts");
  if (!counts || !counts->is_array() || int(counts->size()) != n_layer)
    return Status::errorf("{}: counts must be {} rows", name, n_layer);
  for (int l = 0; l < n_layer; ++l) {
    const auto& row = (*counts)[size_t(l)];
    if (!row.is_array() || int(row.size()) != n_expert)
      return Status::errorf("{}: counts row {} must hold {} numbers", name, l, n_expert);
    for (int e = 0; e < n_expert; ++e) {
      const std::optional<uint64_t> count = json_as<uint64_t>(row[size_t(e)]);
      if (!count) return Status::errorf("{}: counts[{}][{}] is not a count", name, l, e);
      usage.counts_[size_t(l) * size_t(n_expert) + size_t(e)] = *count;
    }
  }
  return usage;
}

Status ExpertUsage::save(const std::string& path) const {
  nlohmann::json counts = nlohmann::json::array();
  for (int l = 0; l < n_layer_; ++l)
    counts.push_back(std::vector<uint64_t>(counts_.begin() + l * n_expert_,
                                           counts_.begin() + (l + 1) * n_expert_));
  const nlohmann::json json = {{"format", "strata-expert-usage"},
                               {"version", 1},
                               {"n_layer", n_layer_},
                               {"n_expert", n_expert_},
                               {"counts", counts}};
  return write_file_atomically(path, json.dump() + "\n");
}

void ExpertUsage::merge(const ExpertUsage& other) {
  for (size_t i = 0; i < counts_.size() && i < other.counts_.size(); ++i)
    counts_[i] += other.counts_[i];
}

std::vector<std::pair<int, int32_t>> ExpertUsage::hottest() const {
  std::vector<size_t> order(counts_.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return counts_[a] > counts_[b]; });
  std::vector<std::pair<int, int32_t>> units;
  for (size_t i : order) {
    if (counts_[i] == 0) break;
    units.push_back({int(i / size_t(n_expert_)), int32_t(i % size_t(n_expert_))});
  }
  return units;
}

}  // namespace strata
