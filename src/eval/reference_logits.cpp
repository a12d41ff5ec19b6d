#include "eval/reference_logits.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iterator>

#include "base/atomic_file.h"
#include "base/check.h"
#include "base/interrupt.h"
#include "base/whole_file.h"
#include "eval/reference_files.h"

namespace strata::eval {
namespace {

namespace fs = std::filesystem;

constexpr const char* kManifest = "reference.json";

std::string path_in(const std::string& dir, const std::string& name) {
  return (fs::path(dir) / name).string();
}

std::string tokens_json(std::span<const int32_t> tokens) {
  return nlohmann::json(std::vector<int32_t>(tokens.begin(), tokens.end())).dump() + "\n";
}

std::span<const int32_t> fed_tokens(std::span<const int32_t> window_tokens) {
  return window_tokens.first(window_tokens.size() - 1);
}

}  // namespace

Status write_window_tokens(const std::string& dir, const Suite& suite,
                           const std::vector<std::vector<int32_t>>& tokens) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return Status::errorf("{}: cannot create: {}", dir, error.message());
  const std::vector<std::string> paths = window_tokens_files(dir, suite);
  for (size_t i = 0; i < paths.size(); ++i)
    STRATA_RETURN_IF_ERROR(write_file_atomically(paths[i], tokens_json(fed_tokens(tokens[i]))));
  return Status();
}

std::vector<std::string> window_tokens_files(const std::string& dir, const Suite& suite) {
  std::vector<std::string> paths;
  for (const SuiteWindow& window : suite.windows)
    paths.push_back(path_in(dir, window.id + ".tokens.json"));
  return paths;
}

std::vector<std::string> reference_files(const std::string& dir, const Suite& suite) {
  std::vector<std::string> paths = {path_in(dir, kManifest)};
  for (const SuiteWindow& window : suite.windows)
    for (const char* suffix : {".tokens.json", ".logits.bin", ".topk.bin"})
      paths.push_back(path_in(dir, window.id + suffix));
  return paths;
}

Result<ReferenceReader> ReferenceReader::open(const std::string& dir, const Suite& suite,
                                              int64_t n_vocab) {
  ReferenceReader reader;
  reader.dir_ = dir;
  reader.n_vocab_ = n_vocab;
  const std::string manifest_path = path_in(dir, kManifest);
  if (!fs::exists(manifest_path)) {
    if (!fs::is_directory(dir)) return Status::errorf("{}: no such directory", dir);
    // Refused before any scoring, so that a half-written directory is never half read.
    for (const SuiteWindow& w : suite.windows)
      if (!fs::exists(path_in(dir, w.id + ".logits.bin")))
        return Status::errorf("{}: no {} and no {}.logits.bin: not a complete reference", dir,
                              kManifest, w.id);
    reader.description_ = {{"logits_dir", dir}, {"manifest", false}};
    return reader;
  }
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_whole_file(manifest_path));
  STRATA_ASSIGN_OR_RETURN(ReferenceManifest manifest,
                          parse_reference_manifest(text, manifest_path, suite, n_vocab));
  reader.top_k_ = manifest.top_k;
  reader.description_ = std::move(manifest.description);
  reader.description_["logits_dir"] = dir;
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
    STRATA_ASSIGN_OR_RETURN(rows.top_k,
                            parse_top_k_rows(bytes, path, window.scored, top_k_, n_vocab_));
    return rows;
  }
  const std::string path = path_in(dir_, window.id + ".logits.bin");
  STRATA_ASSIGN_OR_RETURN(const std::string bytes, read_whole_file(path));
  STRATA_ASSIGN_OR_RETURN(rows.full, parse_full_rows(bytes, path, window.scored,
                                                     window.length() - 1, n_vocab_, window.id));
  return rows;
}

Result<ReferenceWriter> ReferenceWriter::create(const std::string& dir, int64_t n_vocab, int top_k,
                                                nlohmann::json description, bool replace) {
  STRATA_CHECK(top_k >= 0 && top_k <= n_vocab);
  // "ref/" names the directory "ref": the partial one goes beside it, not inside.
  const fs::path target = fs::path(dir).lexically_normal();
  const fs::path named = target.has_filename() ? target : target.parent_path();
  std::error_code error;
  if (!replace && fs::exists(named, error) &&
      !(fs::is_directory(named) && fs::is_empty(named, error)))
    return Status::errorf("{}: already exists; --force replaces it", dir);
  if (replace && fs::exists(named, error) && !fs::is_directory(named))
    return Status::errorf("{}: not a directory", dir);
  if (const fs::path parent = named.parent_path(); !parent.empty() && !fs::is_directory(parent))
    return Status::errorf("{}: no such directory", parent.string());
  ReferenceWriter writer;
  writer.partial_ = TemporaryPath(fmt::format("{}.partial-{}", named.string(), ::getpid()),
                                  TemporaryPath::Kind::kDirectory);
  if (!fs::create_directory(writer.partial_.path(), error) || error)
    return Status::errorf("{}: cannot create: {}", writer.partial_.path(),
                          error ? error.message() : "it exists");
  writer.dir_ = named.string();
  writer.replace_ = replace;
  writer.n_vocab_ = n_vocab;
  writer.top_k_ = top_k;
  writer.description_ = std::move(description);
  return writer;
}

Status ReferenceWriter::write(const SuiteWindow& window, std::span<const int32_t> window_tokens,
                              std::span<const float> full_rows) {
  STRATA_CHECK_EQ(int64_t(window_tokens.size()), window.length());
  STRATA_CHECK_EQ(full_rows.size(), size_t(window.scored * n_vocab_));
  const std::string& dir = partial_.path();
  STRATA_RETURN_IF_ERROR(write_file_atomically(path_in(dir, window.id + ".tokens.json"),
                                               tokens_json(fed_tokens(window_tokens))));
  if (top_k_ == 0) {
    STRATA_RETURN_IF_ERROR(write_file_atomically(
        path_in(dir, window.id + ".logits.bin"),
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
    STRATA_RETURN_IF_ERROR(write_file_atomically(path_in(dir, window.id + ".topk.bin"), bytes));
  }
  windows_.push_back(
      {{"id", window.id}, {"tokens_fnv1a64", window.tokens_fnv1a64}, {"scored", window.scored}});
  return Status();
}

Status ReferenceWriter::finish() {
  const nlohmann::json manifest = {{"format", kReferenceFormat}, {"version", kReferenceVersion},
                                   {"n_vocab", n_vocab_},        {"top_k", top_k_},
                                   {"reference", description_},  {"windows", windows_}};
  STRATA_RETURN_IF_ERROR(
      write_file_atomically(path_in(partial_.path(), kManifest), manifest.dump(1) + "\n"));
  // Over an empty directory of that name too (rename(2) replaces one); a full one is moved
  // aside first and removed once the new one is in place.
  // A second signal between moving the previous reference aside and putting the new one in
  // place would remove both (their paths are listed): it waits for the end of this bracket.
  CommitScope commit;
  if (!commit.entered()) return interrupted_error();
  std::error_code error;
  TemporaryPath previous;
  if (replace_ && fs::exists(dir_, error) && !fs::is_empty(dir_, error)) {
    previous = TemporaryPath(fmt::format("{}.previous-{}", dir_, ::getpid()),
                             TemporaryPath::Kind::kDirectory);
    fs::rename(dir_, previous.path(), error);
    if (error)
      return Status::errorf("{}: cannot move the previous reference aside: {}", dir_,
                            error.message());
  }
  fs::rename(partial_.path(), dir_, error);
  if (error) {
    const std::string message =
        fmt::format("{}: cannot rename {} into place: {}", dir_, partial_.path(), error.message());
    // The previous reference goes back where it was: nothing the user had is lost.
    if (!previous.path().empty()) {
      fs::rename(previous.path(), dir_, error);
      if (!error) previous.release();
    }
    return Status::error(message);
  }
  commit.in_place();
  partial_.release();
  return Status();
}

}  // namespace strata::eval
