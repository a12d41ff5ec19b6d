// The suite file (format in suite.h): writing it, and reading it back from text no one vouches
// for (`strata eval run --suite FILE`).
#include "eval/suite.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "base/json_field.h"
#include "base/whole_file.h"

namespace strata::eval {
namespace {

constexpr const char* kFormat = "strata-eval-suite";
constexpr int kVersion = 1;

// The first field of `object` that is missing or of another type, in order, as "name" or
// "parent.name"; empty when all are there.
class FieldReader {
 public:
  explicit FieldReader(const nlohmann::json& object, std::string parent = "")
      : object_(object), parent_(std::move(parent)) {}
  FieldReader(nlohmann::json&&, std::string = "") = delete;  // it keeps a reference

  template <class T>
  void read(const char* key, T& out) {
    if (!first_bad_.empty()) return;
    if (const std::optional<T> value = json_field<T>(object_, key))
      out = *value;
    else
      first_bad_ = parent_.empty() ? key : parent_ + "." + key;
  }
  const std::string& first_bad() const { return first_bad_; }

 private:
  const nlohmann::json& object_;
  std::string parent_;
  std::string first_bad_;
};

Result<SuiteWindow> decode_window(const nlohmann::json& item, size_t index,
                                  const std::string& name) {
  SuiteWindow w;
  FieldReader fields(item, fmt::format("windows[{}]", index));
  fields.read("id", w.id);
  fields.read("domain", w.domain);
  fields.read("document", w.document);
  fields.read("source", w.source);
  fields.read("source_sha256", w.source_sha256);
  fields.read("start", w.start);
  fields.read("prompt", w.prompt);
  fields.read("scored", w.scored);
  fields.read("tokens_fnv1a64", w.tokens_fnv1a64);
  if (!fields.first_bad().empty())
    return Status::errorf("{}: malformed suite: {} is missing or of another type", name,
                          fields.first_bad());
  if (!is_window_id(w.id))
    return Status::errorf("{}: window {}: id {} cannot name a file", name, index,
                          json_quoted(w.id));
  if (w.start < 0 || w.prompt < 1 || w.scored < 1)
    return Status::errorf("{}: window {}: start must be >= 0, prompt and scored >= 1", name, w.id);
  return w;
}

}  // namespace

bool is_window_id(std::string_view id) {
  return !id.empty() && id[0] != '.' && id.find_first_of("/\\") == std::string_view::npos &&
         std::none_of(id.begin(), id.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

std::string encode_suite(const Suite& suite) {
  nlohmann::ordered_json windows = nlohmann::ordered_json::array();
  for (const SuiteWindow& w : suite.windows)
    windows.push_back({{"id", w.id},
                       {"domain", w.domain},
                       {"document", w.document},
                       {"source", w.source},
                       {"source_sha256", w.source_sha256},
                       {"start", w.start},
                       {"prompt", w.prompt},
                       {"scored", w.scored},
                       {"tokens_fnv1a64", w.tokens_fnv1a64}});
  const nlohmann::ordered_json json = {
      {"format", kFormat},
      {"version", kVersion},
      {"eval_dir", suite.eval_dir},
      {"tokenizer", {{"path", suite.tokenizer_path}, {"n_tokens", suite.tokenizer_n_tokens}}},
      {"seed", suite.seed},
      {"windows_per_domain", suite.windows_per_domain},
      {"prompt", suite.prompt},
      {"scored", suite.scored},
      {"windows", windows}};
  return json.dump(1) + "\n";
}

Result<Suite> decode_suite(const std::string& text, const std::string& name) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || json_field<std::string>(json, "format") != kFormat)
    return Status::errorf("{}: not a strata eval suite (JSON with \"format\": \"{}\")", name,
                          kFormat);
  if (const nlohmann::json* version = json_member(json, "version");
      !version || json_as<int>(*version) != kVersion)
    return Status::errorf("{}: suite version {} (this build reads {})", name,
                          version ? version->dump() : "missing", kVersion);
  Suite suite;
  FieldReader fields(json);
  fields.read("eval_dir", suite.eval_dir);
  const nlohmann::json* tokenizer = json_member(json, "tokenizer");
  const nlohmann::json none;
  FieldReader tokenizer_fields(tokenizer ? *tokenizer : none, "tokenizer");
  tokenizer_fields.read("path", suite.tokenizer_path);
  tokenizer_fields.read("n_tokens", suite.tokenizer_n_tokens);
  fields.read("seed", suite.seed);
  fields.read("windows_per_domain", suite.windows_per_domain);
  fields.read("prompt", suite.prompt);
  fields.read("scored", suite.scored);
  const nlohmann::json* windows = json_member(json, "windows");
  for (const std::string& bad : {fields.first_bad(), tokenizer_fields.first_bad(),
                                 std::string(windows && windows->is_array() ? "" : "windows")})
    if (!bad.empty())
      return Status::errorf("{}: malformed suite: {} is missing or of another type", name, bad);
  std::set<std::string> ids;
  for (size_t i = 0; i < windows->size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(SuiteWindow w, decode_window((*windows)[i], i, name));
    if (!ids.insert(w.id).second)
      return Status::errorf("{}: window id {} appears twice", name, w.id);
    suite.windows.push_back(std::move(w));
  }
  if (suite.windows.empty()) return Status::errorf("{}: the suite has no windows", name);
  return suite;
}

Result<Suite> read_suite(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_whole_file(path));
  return decode_suite(text, path);
}

// Relative to the suite file, not to where a run starts: a suite then runs from any directory,
// and a copied tree (a suite beside its documents) keeps working.
std::string suite_eval_dir(const Suite& suite, const std::string& suite_path) {
  const std::filesystem::path dir(suite.eval_dir);
  if (dir.is_absolute()) return dir.string();
  return (std::filesystem::path(suite_path).parent_path() / dir).lexically_normal().string();
}

std::string eval_dir_for_suite(const std::string& eval_dir, const std::string& suite_path) {
  const std::filesystem::path dir(eval_dir);
  if (dir.is_absolute()) return dir.string();
  const std::filesystem::path suite_dir =
      std::filesystem::absolute(suite_path).parent_path().lexically_normal();
  const std::filesystem::path relative =
      std::filesystem::absolute(dir).lexically_normal().lexically_relative(suite_dir);
  return relative.empty() ? "." : relative.string();
}

}  // namespace strata::eval
