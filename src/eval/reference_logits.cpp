#include "eval/reference_logits.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>

#include "base/atomic_file.h"
#include "base/check.h"
#include "base/json_field.h"
#include "base/whole_file.h"

namespace strata::eval {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "strata-eval-reference";
constexpr int kVersion = 1;
constexpr const char* kManifest = "reference.json";

// Rows are raw little-endian floats, as `strata logits` writes them (x86 and ARM hosts are
// little-endian).
static_assert(std::endian::native == std::endian::little);

std::string path_in(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

std::string tokens_json(std::span<const int32_t> tokens) {
  return nlohmann::json(std::vector<int32_t>(tokens.begin(), tokens.end())).dump() + "\n";
}

std::span<const int32_t> fed_tokens(std::span<const int32_t> window_tokens) {
  return window_tokens.first(window_tokens.size() - 1);
}

Result<std::vector<TopKRow>> parse_top_k(const std::string& bytes, const std::string& path,
                                         int64_t scored, int top_k, int64_t n_vocab) {
  const size_t row_bytes = 4 + size_t(top_k) * 8;
  if (bytes.size() != size_t(scored) * row_bytes)
    return Status::errorf("{}: {} bytes, expected {} rows of top-{} ({} bytes)", path, bytes.size(),
                          scored, top_k, size_t(scored) * row_bytes);
  std::vector<TopKRow> rows(static_cast<size_t>(scored));
  const char* p = bytes.data();
  for (TopKRow& row : rows) {
    std::memcpy(&row.next_log_prob, p, 4);
    p += 4;
    for (int i = 0; i < top_k; ++i, p += 8) {
      int32_t id;
      float log_prob;
      std::memcpy(&id, p, 4);
      std::memcpy(&log_prob, p + 4, 4);
      if (id < 0 || id >= n_vocab || !(log_prob <= 0))
        return Status::errorf("{}: entry with id {} and log-prob {} is out of range", path, id,
                              log_prob);
      row.ids.push_back(id);
      row.log_probs.push_back(log_prob);
    }
  }
  return rows;
}

}  // namespace

Status write_window_tokens(const std::string& dir, const Suite& suite,
                           const std::vector<std::vector<int32_t>>& tokens) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return Status::errorf("{}: cannot create: {}", dir, error.message());
  for (size_t i = 0; i < suite.windows.size(); ++i)
    STRATA_RETURN_IF_ERROR(write_file_atomically(path_in(dir, suite.windows[i].id + ".tokens.json"),
                                                 tokens_json(fed_tokens(tokens[i]))));
  return Status();
}

Result<ReferenceReader> ReferenceReader::open(const std::string& dir, const Suite& suite,
                                              int64_t n_vocab) {
  ReferenceReader reader;
  reader.dir_ = dir;
  reader.n_vocab_ = n_vocab;
  const std::string manifest_path = path_in(dir, kManifest);
  if (!fs::exists(manifest_path)) {
    if (!fs::is_directory(dir)) return Status::errorf("{}: no such directory", dir);
    reader.description_ = {{"logits_dir", dir}, {"manifest", false}};
    return reader;
  }
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_whole_file(manifest_path));
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* windows = json_member(json, "windows");
  if (json.is_discarded() || json_field<std::string>(json, "format") != kFormat ||
      json_field<int>(json, "version") != kVersion || !windows || !windows->is_array())
    return Status::errorf("{}: not a version-{} strata reference manifest", manifest_path,
                          kVersion);
  const std::optional<int64_t> rows_of = json_field<int64_t>(json, "n_vocab");
  if (rows_of != n_vocab)
    return Status::errorf("{}: rows of {} logits, the candidate has {}", manifest_path,
                          rows_of ? std::to_string(*rows_of) : "unknown", n_vocab);
  const std::optional<int> top_k = json_field<int>(json, "top_k");
  if (json_member(json, "top_k") && (!top_k || *top_k < 0 || *top_k > n_vocab))
    return Status::errorf("{}: top_k must be 0..{}", manifest_path, n_vocab);
  reader.top_k_ = top_k.value_or(0);
  const nlohmann::json* reference = json_member(json, "reference");
  reader.description_ = reference && reference->is_object() ? *reference : nlohmann::json::object();
  reader.description_["logits_dir"] = dir;
  for (const SuiteWindow& w : suite.windows) {
    const auto stored = std::find_if(windows->begin(), windows->end(), [&](const auto& item) {
      return json_field<std::string>(item, "id") == w.id;
    });
    if (stored == windows->end())
      return Status::errorf("{}: no reference for window {}", manifest_path, w.id);
    if (json_field<std::string>(*stored, "tokens_fnv1a64") != w.tokens_fnv1a64 ||
        json_field<int64_t>(*stored, "scored") != w.scored)
      return Status::errorf("{}: window {} was stored for other tokens than the suite's",
                            manifest_path, w.id);
  }
  return reader;
}

Result<ReferenceRows> ReferenceReader::read(const SuiteWindow& window,
                                            std::span<const int32_t> window_tokens) const {
  STRATA_CHECK_EQ(int64_t(window_tokens.size()), window.length());
  const std::string tokens_path = path_in(dir_, window.id + ".tokens.json");
  if (fs::exists(tokens_path)) {
    STRATA_ASSIGN_OR_RETURN(const std::string text, read_whole_file(tokens_path));
    const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() ||
        json != nlohmann::json::parse(tokens_json(fed_tokens(window_tokens))))
      return Status::errorf("{}: not the tokens of suite window {}", tokens_path, window.id);
  }
  ReferenceRows rows;
  if (top_k_ > 0) {
    const std::string path = path_in(dir_, window.id + ".topk.bin");
    STRATA_ASSIGN_OR_RETURN(const std::string bytes, read_whole_file(path));
    STRATA_ASSIGN_OR_RETURN(rows.top_k, parse_top_k(bytes, path, window.scored, top_k_, n_vocab_));
    return rows;
  }
  const std::string path = path_in(dir_, window.id + ".logits.bin");
  STRATA_ASSIGN_OR_RETURN(const std::string bytes, read_whole_file(path));
  const size_t row_bytes = size_t(n_vocab_) * sizeof(float);
  const size_t n_rows = bytes.size() / row_bytes;
  const size_t scored = size_t(window.scored), fed = size_t(window.length() - 1);
  if (bytes.size() % row_bytes != 0 || (n_rows != scored && n_rows != fed))
    return Status::errorf(
        "{}: {} bytes; expected {} or {} rows of {} float32 logits (scored positions, or a "
        "`strata logits` dump of {}.tokens.json)",
        path, bytes.size(), scored, fed, n_vocab_, window.id);
  const size_t skip = (n_rows - scored) * row_bytes;
  rows.full.resize(scored * size_t(n_vocab_));
  std::memcpy(rows.full.data(), bytes.data() + skip, scored * row_bytes);
  return rows;
}

Result<ReferenceWriter> ReferenceWriter::create(const std::string& dir, int64_t n_vocab, int top_k,
                                                nlohmann::json description) {
  STRATA_CHECK(top_k >= 0 && top_k <= n_vocab);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return Status::errorf("{}: cannot create: {}", dir, error.message());
  ReferenceWriter writer;
  writer.dir_ = dir;
  writer.n_vocab_ = n_vocab;
  writer.top_k_ = top_k;
  writer.description_ = std::move(description);
  return writer;
}

Status ReferenceWriter::write(const SuiteWindow& window, std::span<const int32_t> window_tokens,
                              std::span<const float> full_rows) {
  STRATA_CHECK_EQ(int64_t(window_tokens.size()), window.length());
  STRATA_CHECK_EQ(full_rows.size(), size_t(window.scored * n_vocab_));
  STRATA_RETURN_IF_ERROR(write_file_atomically(path_in(dir_, window.id + ".tokens.json"),
                                               tokens_json(fed_tokens(window_tokens))));
  if (top_k_ == 0) {
    STRATA_RETURN_IF_ERROR(write_file_atomically(
        path_in(dir_, window.id + ".logits.bin"),
        {reinterpret_cast<const uint8_t*>(full_rows.data()), full_rows.size_bytes()}));
  } else {
    std::string bytes;
    for (int64_t j = 0; j < window.scored; ++j) {
      const int32_t next = window_tokens[size_t(window.prompt + j)];
      const TopKRow row =
          top_k_row(full_rows.subspan(size_t(j * n_vocab_), size_t(n_vocab_)), top_k_, next);
      bytes.append(reinterpret_cast<const char*>(&row.next_log_prob), 4);
      for (int i = 0; i < top_k_; ++i) {
        bytes.append(reinterpret_cast<const char*>(&row.ids[size_t(i)]), 4);
        bytes.append(reinterpret_cast<const char*>(&row.log_probs[size_t(i)]), 4);
      }
    }
    STRATA_RETURN_IF_ERROR(write_file_atomically(path_in(dir_, window.id + ".topk.bin"), bytes));
  }
  windows_.push_back(
      {{"id", window.id}, {"tokens_fnv1a64", window.tokens_fnv1a64}, {"scored", window.scored}});
  return Status();
}

Status ReferenceWriter::finish() const {
  const nlohmann::json manifest = {{"format", kFormat},         {"version", kVersion},
                                   {"n_vocab", n_vocab_},       {"top_k", top_k_},
                                   {"reference", description_}, {"windows", windows_}};
  return write_file_atomically(path_in(dir_, kManifest), manifest.dump(1) + "\n");
}

}  // namespace strata::eval
