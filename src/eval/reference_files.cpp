#include "eval/reference_files.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/json_field.h"

namespace strata::eval {

// Rows are raw little-endian floats, as `strata logits` writes them (x86 and ARM hosts are
// little-endian).
static_assert(std::endian::native == std::endian::little);

Result<ReferenceManifest> parse_reference_manifest(const std::string& text, const std::string& path,
                                                   const Suite& suite, int64_t n_vocab) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* windows = json_member(json, "windows");
  if (json.is_discarded() || json_field<std::string>(json, "format") != kReferenceFormat ||
      json_field<int>(json, "version") != kReferenceVersion || !windows || !windows->is_array())
    return Status::errorf("{}: not a version-{} strata reference manifest", path,
                          kReferenceVersion);
  const std::optional<int64_t> rows_of = json_field<int64_t>(json, "n_vocab");
  if (rows_of != n_vocab)
    return Status::errorf("{}: rows of {} logits, the candidate has {}", path,
                          rows_of ? std::to_string(*rows_of) : "unknown", n_vocab);
  const std::optional<int> top_k = json_field<int>(json, "top_k");
  if (json_member(json, "top_k") && (!top_k || *top_k < 0 || *top_k > n_vocab))
    return Status::errorf("{}: top_k must be 0..{}", path, n_vocab);
  ReferenceManifest manifest;
  manifest.top_k = top_k.value_or(0);
  const nlohmann::json* reference = json_member(json, "reference");
  manifest.description =
      reference && reference->is_object() ? *reference : nlohmann::json::object();
  for (const SuiteWindow& w : suite.windows) {
    const auto stored = std::find_if(windows->begin(), windows->end(), [&](const auto& item) {
      return json_field<std::string>(item, "id") == w.id;
    });
    if (stored == windows->end())
      return Status::errorf("{}: no reference for window {}", path, w.id);
    if (json_field<std::string>(*stored, "tokens_fnv1a64") != w.tokens_fnv1a64 ||
        json_field<int64_t>(*stored, "scored") != w.scored)
      return Status::errorf("{}: window {} was stored for other tokens than the suite's", path,
                            w.id);
  }
  return manifest;
}

Result<std::vector<float>> parse_full_rows(const std::string& bytes, const std::string& path,
                                           int64_t scored, int64_t fed, int64_t n_vocab,
                                           const std::string& window_id) {
  STRATA_CHECK(n_vocab >= 1);
  const size_t row_bytes = size_t(n_vocab) * sizeof(float);
  const size_t n_rows = bytes.size() / row_bytes;
  if (bytes.size() % row_bytes != 0 || (n_rows != size_t(scored) && n_rows != size_t(fed)))
    return Status::errorf(
        "{}: {} bytes; expected {} or {} rows of {} float32 logits (scored positions, or a "
        "`strata logits` dump of {}.tokens.json)",
        path, bytes.size(), scored, fed, n_vocab, window_id);
  std::vector<float> rows(size_t(scored) * size_t(n_vocab));
  if (!rows.empty())  // memcpy's pointers must not be null, even for no bytes
    std::memcpy(rows.data(), bytes.data() + (n_rows - size_t(scored)) * row_bytes,
                rows.size() * sizeof(float));
  const auto bad =
      std::find_if(rows.begin(), rows.end(), [](float v) { return !std::isfinite(v); });
  if (bad != rows.end()) {
    const size_t at = size_t(bad - rows.begin());
    return Status::errorf("{}: scored row {}: logit {} of token {} is not finite", path,
                          at / size_t(n_vocab), *bad, at % size_t(n_vocab));
  }
  return rows;
}

Result<std::vector<TopKRow>> parse_top_k_rows(const std::string& bytes, const std::string& path,
                                              int64_t scored, int top_k, int64_t n_vocab) {
  STRATA_CHECK(top_k >= 1);
  const size_t row_bytes = 4 + size_t(top_k) * 8;
  if (bytes.size() != size_t(scored) * row_bytes)
    return Status::errorf("{}: {} bytes, expected {} rows of top-{} ({} bytes)", path, bytes.size(),
                          scored, top_k, size_t(scored) * row_bytes);
  std::vector<TopKRow> rows(static_cast<size_t>(scored));
  const char* p = bytes.data();
  std::vector<int32_t> sorted_ids;
  for (size_t r = 0; r < rows.size(); ++r) {
    TopKRow& row = rows[r];
    std::memcpy(&row.next_log_prob, p, 4);
    p += 4;
    if (!std::isfinite(row.next_log_prob) || row.next_log_prob > 0)
      return Status::errorf("{}: row {}: the next token's log-prob {} is not a log-probability",
                            path, r, row.next_log_prob);
    for (int i = 0; i < top_k; ++i, p += 8) {
      int32_t id;
      float log_prob;
      std::memcpy(&id, p, 4);
      std::memcpy(&log_prob, p + 4, 4);
      if (id < 0 || id >= n_vocab || !(log_prob <= 0))
        return Status::errorf("{}: row {}: entry with id {} and log-prob {} is out of range", path,
                              r, id, log_prob);
      // The first entry is taken as the reference's argmax (metrics.h).
      if (i > 0 && log_prob > row.log_probs.back())
        return Status::errorf("{}: row {}: entries are not in descending probability", path, r);
      row.ids.push_back(id);
      row.log_probs.push_back(log_prob);
    }
    sorted_ids = row.ids;
    std::sort(sorted_ids.begin(), sorted_ids.end());
    if (std::adjacent_find(sorted_ids.begin(), sorted_ids.end()) != sorted_ids.end())
      return Status::errorf("{}: row {}: a token appears twice", path, r);
  }
  return rows;
}

}  // namespace strata::eval
