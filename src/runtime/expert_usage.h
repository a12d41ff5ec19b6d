// How often each expert of a model was routed to: the warm-start file (`--warm FILE`). A
// session preloads the hottest experts from it at start (a function of the file alone, so
// runs stay deterministic) and writes its own counts back.
//
// Format (JSON): {"format": "strata-expert-usage", "version": 1, "n_layer": L,
//                 "n_expert": E, "counts": [[c_0_0, ..., c_0_E-1], ..., [c_L-1_0, ...]]}
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {

class ExpertUsage {
 public:
  ExpertUsage(int n_layer, int n_expert);

  // Errors name the file: unreadable, not this format, or made for another shape of model.
  static Result<ExpertUsage> load(const std::string& path, int n_layer, int n_expert);
  // The same from the file's text; `name` prefixes the errors.
  static Result<ExpertUsage> parse(std::string_view text, const std::string& name, int n_layer,
                                   int n_expert);
  // Written to a temporary name and renamed.
  Status save(const std::string& path) const;

  void add(int layer, int32_t expert) {
    ++counts_[size_t(layer) * size_t(n_expert_) + size_t(expert)];
  }
  void merge(const ExpertUsage& other);
  uint64_t count(int layer, int32_t expert) const {
    return counts_[size_t(layer) * size_t(n_expert_) + size_t(expert)];
  }
  // Every used (layer, expert), most used first; ties by layer, then expert.
  std::vector<std::pair<int, int32_t>> hottest() const;

 private:
  int n_layer_, n_expert_;
  std::vector<uint64_t> counts_;
};

}  // namespace strata
