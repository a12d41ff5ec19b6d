#include "eval/suite.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "base/json_field.h"
#include "base/whole_file.h"
#include "eval/bootstrap.h"
#include "lab/provenance.h"

namespace strata::eval {
namespace {

constexpr const char* kChatDomain = "chat";
constexpr const char* kAssistantTurn = "<|im_start|>assistant";

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull, kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a64(const void* data, size_t size, uint64_t hash = kFnvOffset) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * kFnvPrime;
  return hash;
}

struct Document {
  std::string id, domain, text;
};

// One JSON object per line; blank lines are skipped.
Result<std::vector<Document>> parse_documents(const std::string& text, const std::string& path) {
  std::vector<Document> documents;
  std::set<std::string> ids;
  size_t line_number = 0;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    const std::string_view line(text.data() + begin, end - begin);
    begin = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const auto json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const auto is_string = [&](const char* key) {
      return json.is_object() && json.contains(key) && json[key].is_string();
    };
    if (!is_string("id") || !is_string("domain") || !is_string("text"))
      return Status::errorf("{}:{}: expected a JSON object with string fields id, domain, text",
                            path, line_number);
    Document doc{json["id"], json["domain"], json["text"]};
    if (!ids.insert(doc.id).second)
      return Status::errorf("{}:{}: document id {} appears twice", path, line_number,
                            json_quoted(doc.id));
    documents.push_back(std::move(doc));
  }
  return documents;
}

// The ids of `text` without the BOS the tokenizer may put first.
std::vector<int32_t> encode_bare(const TextTokenizer& tokenizer, std::string_view text) {
  const size_t bos = tokenizer.encode("").size();
  std::vector<int32_t> ids = tokenizer.encode(text);
  ids.erase(ids.begin(), ids.begin() + ptrdiff_t(bos));
  return ids;
}

struct Candidate {
  const Document* document;
  std::string source, source_sha256;
  std::vector<int64_t> starts;  // possible starts, ascending
  std::vector<int64_t> taken;   // starts of the windows drawn from it
};

std::vector<int64_t> possible_starts(const std::vector<int32_t>& tokens, int64_t length,
                                     const std::vector<int32_t>* marker) {
  std::vector<int64_t> starts;
  for (int64_t s = 0; s + length <= int64_t(tokens.size()); ++s)
    if (!marker || std::equal(marker->begin(), marker->end(), tokens.begin() + s))
      starts.push_back(s);
  return starts;
}

// Draws up to spec.windows_per_domain windows from one domain's candidates.
std::vector<SuiteWindow> draw_domain(const std::string& domain, std::vector<Candidate> candidates,
                                     const SuiteSpec& spec) {
  SplitMix64 random(spec.seed ^ fnv1a64(domain.data(), domain.size()));
  for (size_t i = candidates.size(); i > 1; --i)
    std::swap(candidates[i - 1], candidates[random.below(i)]);
  const int64_t length = spec.prompt + spec.scored;
  std::vector<SuiteWindow> windows;
  bool drew = true;
  while (drew && int64_t(windows.size()) < spec.windows_per_domain) {
    drew = false;
    for (Candidate& c : candidates) {
      if (int64_t(windows.size()) == spec.windows_per_domain) break;
      std::vector<int64_t> free;
      for (int64_t s : c.starts)
        if (std::none_of(c.taken.begin(), c.taken.end(),
                         [&](int64_t t) { return s < t + length && t < s + length; }))
          free.push_back(s);
      if (free.empty()) continue;
      const int64_t start = free[random.below(free.size())];
      c.taken.push_back(start);
      windows.push_back({fmt::format("{}-{:03d}", domain, windows.size()), domain, c.document->id,
                         c.source, c.source_sha256, start, spec.prompt, spec.scored, ""});
      drew = true;
    }
  }
  return windows;
}

struct Source {
  std::string name, sha256;
  std::vector<Document> documents;
};

Result<Source> read_source(const std::string& eval_dir, const std::string& name) {
  const std::string path = (std::filesystem::path(eval_dir) / name).string();
  STRATA_ASSIGN_OR_RETURN(const std::string text, read_whole_file(path));
  STRATA_ASSIGN_OR_RETURN(std::string sha256, sha256_file(path));
  STRATA_ASSIGN_OR_RETURN(std::vector<Document> documents, parse_documents(text, path));
  return Source{name, std::move(sha256), std::move(documents)};
}

}  // namespace

std::string tokens_fnv1a64(std::span<const int32_t> tokens) {
  uint64_t hash = kFnvOffset;
  for (int32_t t : tokens) {
    const uint32_t u = uint32_t(t);
    const unsigned char le[4] = {uint8_t(u), uint8_t(u >> 8), uint8_t(u >> 16), uint8_t(u >> 24)};
    hash = fnv1a64(le, 4, hash);
  }
  return fmt::format("{:016x}", hash);
}

Result<Suite> make_suite(const SuiteSpec& spec, const TextTokenizer& tokenizer,
                         const std::function<void(const std::string&)>& note) {
  if (spec.windows_per_domain < 1 || spec.prompt < 1 || spec.scored < 1)
    return Status::error("make-suite: --windows, --prompt and --scored must be at least 1");
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(spec.eval_dir, error))
    if (entry.path().extension() == ".jsonl") names.push_back(entry.path().filename().string());
  if (error) return Status::errorf("{}: cannot list: {}", spec.eval_dir, error.message());
  if (names.empty()) return Status::errorf("{}: no *.jsonl files", spec.eval_dir);
  std::sort(names.begin(), names.end());

  const std::vector<int32_t> marker = encode_bare(tokenizer, kAssistantTurn);
  std::vector<Source> sources;
  for (const std::string& name : names) {
    STRATA_ASSIGN_OR_RETURN(Source source, read_source(spec.eval_dir, name));
    sources.push_back(std::move(source));
  }
  std::vector<std::string> domains;  // in order of first appearance
  std::map<std::string, std::vector<Candidate>> by_domain;
  for (const Source& source : sources)
    for (const Document& doc : source.documents) {
      if (!by_domain.count(doc.domain)) domains.push_back(doc.domain);
      auto& list = by_domain[doc.domain];
      Candidate c{&doc, source.name, source.sha256, {}, {}};
      c.starts = possible_starts(tokenizer.encode(doc.text), spec.prompt + spec.scored,
                                 doc.domain == kChatDomain ? &marker : nullptr);
      if (!c.starts.empty()) list.push_back(std::move(c));
    }

  Suite suite{spec.eval_dir,
              spec.tokenizer_path,
              tokenizer.token_count(),
              spec.seed,
              spec.windows_per_domain,
              spec.prompt,
              spec.scored,
              {}};
  for (const std::string& domain : domains) {
    std::vector<SuiteWindow> windows = draw_domain(domain, by_domain[domain], spec);
    if (int64_t(windows.size()) < spec.windows_per_domain)
      note(fmt::format("make-suite: domain {}: only {} windows of {} tokens fit", domain,
                       windows.size(), spec.prompt + spec.scored));
    for (SuiteWindow& w : windows) suite.windows.push_back(std::move(w));
  }
  if (suite.windows.empty())
    return Status::errorf("{}: no document has {} tokens", spec.eval_dir,
                          spec.prompt + spec.scored);
  STRATA_ASSIGN_OR_RETURN(const auto tokens, load_window_tokens(suite, spec.eval_dir, tokenizer));
  for (size_t i = 0; i < suite.windows.size(); ++i)
    suite.windows[i].tokens_fnv1a64 = tokens_fnv1a64(tokens[i]);
  return suite;
}

Result<std::vector<std::vector<int32_t>>> load_window_tokens(const Suite& suite,
                                                             const std::string& eval_dir,
                                                             const TextTokenizer& tokenizer) {
  std::map<std::string, Source> sources;
  std::map<std::pair<std::string, std::string>, std::vector<int32_t>> tokenized;
  std::vector<std::vector<int32_t>> windows;
  for (const SuiteWindow& w : suite.windows) {
    const std::string path = (std::filesystem::path(eval_dir) / w.source).string();
    if (!sources.count(w.source)) {
      if (!std::filesystem::exists(path))
        return Status::errorf(
            "{}: missing: the suite's windows come from it (looked for in {}; --eval-dir DIR "
            "names another directory)",
            path, eval_dir);
      STRATA_ASSIGN_OR_RETURN(Source source, read_source(eval_dir, w.source));
      sources.emplace(w.source, std::move(source));
    }
    const Source& source = sources.at(w.source);
    if (!w.source_sha256.empty() && source.sha256 != w.source_sha256)
      return Status::errorf("{}: sha256 {} differs from the suite's {} (another version of it)",
                            path, source.sha256, w.source_sha256);
    const auto key = std::pair{w.source, w.document};
    if (!tokenized.count(key)) {
      const auto doc = std::find_if(source.documents.begin(), source.documents.end(),
                                    [&](const Document& d) { return d.id == w.document; });
      if (doc == source.documents.end())
        return Status::errorf("{}: no document {} (suite window {})", path, json_quoted(w.document),
                              w.id);
      tokenized.emplace(key, tokenizer.encode(doc->text));
    }
    const std::vector<int32_t>& tokens = tokenized.at(key);
    if (w.start + w.length() > int64_t(tokens.size()))
      return Status::errorf(
          "{}: document {} has {} tokens; window {} needs {}..{} (another tokenizer than {}?)",
          path, json_quoted(w.document), tokens.size(), w.id, w.start, w.start + w.length(),
          suite.tokenizer_path);
    std::vector<int32_t> window(tokens.begin() + w.start, tokens.begin() + w.start + w.length());
    if (!w.tokens_fnv1a64.empty() && tokens_fnv1a64(window) != w.tokens_fnv1a64)
      return Status::errorf(
          "window {}: its tokens hash to {}, the suite says {} (another tokenizer than {}?)", w.id,
          tokens_fnv1a64(window), w.tokens_fnv1a64, suite.tokenizer_path);
    windows.push_back(std::move(window));
  }
  return windows;
}

}  // namespace strata::eval
