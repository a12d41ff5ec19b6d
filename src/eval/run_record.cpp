#include "eval/run_record.h"

#include <optional>

#include "base/json_field.h"
#include "base/whole_file.h"
#include "eval/suite.h"

namespace strata::eval {
namespace {

std::optional<RunWindow> parse_window(const nlohmann::json& item) {
  const auto id = json_field<std::string>(item, "id");
  const auto domain = json_field<std::string>(item, "domain");
  const auto positions = json_field<int64_t>(item, "positions");
  const auto kld_sum = json_field<double>(item, "kld_sum");
  const auto cand_nll_sum = json_field<double>(item, "cand_nll_sum");
  const auto top1_count = json_field<int64_t>(item, "top1_count");
  if (!id || !is_window_id(*id) || !domain || !positions || !kld_sum || !cand_nll_sum ||
      !top1_count)
    return std::nullopt;
  return RunWindow{*id, *domain, *positions, *kld_sum, *cand_nll_sum, *top1_count};
}

}  // namespace

Result<RunRecord> parse_run_record(const std::string& text, const std::string& path) {
  RunRecord record{path, nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false), {}};
  const nlohmann::json& json = record.json;
  const nlohmann::json* windows = json_member(json, "windows");
  const nlohmann::json* candidate = json_member(json, "candidate");
  if (json.is_discarded() || json_field<std::string>(json, "tool") != "strata eval" || !windows ||
      !windows->is_array() || !candidate || !candidate->is_object())
    return Status::errorf("{}: not a `strata eval run` record", path);
  for (size_t i = 0; i < windows->size(); ++i) {
    std::optional<RunWindow> window = parse_window((*windows)[i]);
    if (!window)
      return Status::errorf(
          "{}: window {}: needs strings id and domain, whole numbers positions and top1_count, "
          "numbers kld_sum and cand_nll_sum",
          path, i);
    if (window->positions < 1 || window->top1_count < 0 || window->top1_count > window->positions)
      return Status::errorf("{}: window {} has {} positions and {} top-1 matches", path, window->id,
                            window->positions, window->top1_count);
    record.windows.push_back(std::move(*window));
  }
  if (record.windows.empty()) return Status::errorf("{}: no windows", path);
  return record;
}

Result<RunRecord> read_run_record(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_whole_file(path));
  return parse_run_record(text, path);
}

}  // namespace strata::eval
