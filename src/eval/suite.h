// Evaluation suites: which windows of which documents `strata eval` scores. A suite holds no
// text. It names its source files (JSON Lines, one document per line: {"id", "domain", "text",
// ...}) with their SHA-256, and refuses to run when a file is missing or differs.
//
// Suite file (JSON), field by field:
//
//   format               "strata-eval-suite"
//   version              1
//   eval_dir             the directory of the sources, relative to the directory of the suite
//                        file (or absolute), wherever a run starts from (a run may name another:
//                        --eval-dir)
//   tokenizer            {"path": the model or vocab file that tokenized the text,
//                         "n_tokens": its vocabulary size}
//   seed                 the seed windows were drawn with
//   windows_per_domain   windows asked for per domain (a domain may have fewer, see make_suite)
//   prompt, scored       the default window shape (every window also states its own)
//   windows              an array, in the order they are scored; each:
//     id                 "<domain>-<index>" (index from 000), unique; names the window's files in
//                        a reference-logits directory
//     domain             the document's "domain"
//     document           the document's "id" (unique within its source)
//     source             file name of the source, relative to the eval directory
//     source_sha256      hex SHA-256 of that file
//     start              index of the window's first token in the document's tokens (the whole
//                        text tokenized at once, special tokens parsed, BOS first if the model
//                        adds one)
//     prompt             tokens fed before the first scored position, >= 1
//     scored             positions scored, >= 1. The window is prompt + scored tokens; scored
//                        position j (0-based) compares the distributions after the window's
//                        first prompt + j tokens, whose actual next token is token prompt + j
//     tokens_fnv1a64     16 hex digits: FNV-1a (64-bit) over the window's token ids as int32
//                        little-endian; a run with another tokenizer fails on it
#pragma once

#include <strata/status.h>
#include <strata/text_tokenizer.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::eval {

struct SuiteWindow {
  std::string id, domain, document, source, source_sha256;
  int64_t start = 0, prompt = 0, scored = 0;
  std::string tokens_fnv1a64;
  int64_t length() const { return prompt + scored; }
};

struct Suite {
  std::string eval_dir;
  std::string tokenizer_path;
  int64_t tokenizer_n_tokens = 0;
  uint64_t seed = 0;
  int64_t windows_per_domain = 0, prompt = 0, scored = 0;
  std::vector<SuiteWindow> windows;
};

// A window id names the window's files in a reference directory and appears in messages: not
// empty, no path separators, no leading dot, no control characters.
bool is_window_id(std::string_view id);

std::string encode_suite(const Suite& suite);  // JSON text, as above
// Any text: a valid suite, or one error line naming `name` and the first problem.
Result<Suite> decode_suite(const std::string& text, const std::string& name);
Result<Suite> read_suite(const std::string& path);

// Where the sources of the suite read from `suite_path` are: its eval_dir, relative to the suite
// file's directory unless absolute.
std::string suite_eval_dir(const Suite& suite, const std::string& suite_path);
// `eval_dir` (relative to the current directory, or absolute) as a suite written to `suite_path`
// names it: relative to the suite file's directory, or absolute as given.
std::string eval_dir_for_suite(const std::string& eval_dir, const std::string& suite_path);

struct SuiteSpec {
  std::string eval_dir;
  std::string tokenizer_path;
  int64_t windows_per_domain = 0, prompt = 0, scored = 0;
  uint64_t seed = 0;
};

// Draws windows from every *.jsonl file of spec.eval_dir (files in name order, documents in
// line order), per domain:
//   * a document is eligible when it has a possible start; possible starts are every token
//     index with room for prompt + scored tokens, except in the "chat" domain, where a window
//     starts at an assistant turn: the tokens of "<|im_start|>assistant";
//   * documents are shuffled (seeded by seed and the domain's name), then taken in turns, one
//     window each, at a start drawn uniformly among those whose window does not overlap the
//     document's earlier windows, until windows_per_domain are drawn or no start is left
//     (`note` then says how many the domain got).
// Deterministic: the same files, tokenizer and spec give the same suite.
Result<Suite> make_suite(const SuiteSpec& spec, const TextTokenizer& tokenizer,
                         const std::function<void(const std::string&)>& note);

// The windows' tokens, in suite order: reads each source once (from eval_dir, as given:
// suite_eval_dir() or --eval-dir), checks its SHA-256, tokenizes the documents and checks every
// window's FNV-1a hash.
Result<std::vector<std::vector<int32_t>>> load_window_tokens(const Suite& suite,
                                                             const std::string& eval_dir,
                                                             const TextTokenizer& tokenizer);

// FNV-1a 64 of token ids as int32 little-endian, 16 lowercase hex digits.
std::string tokens_fnv1a64(std::span<const int32_t> tokens);

}  // namespace strata::eval
