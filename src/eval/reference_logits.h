// Stored reference logits: a directory a run reads instead of evaluating a reference model
// (`--ref-logits DIR`), written by a run that evaluates one (`--save-ref DIR`) or assembled
// from `strata logits` dumps. Files, per suite window <id>:
//
//   <id>.tokens.json   the tokens the model is fed for the window: its first prompt + scored - 1
//                      tokens, a JSON array of ids (what `strata logits --tokens` takes)
//   <id>.logits.bin    full rows: little-endian float32 [rows][n_vocab], row r = the logits after
//                      a token. Either rows = scored (the scored positions only: what --save-ref
//                      writes) or rows = prompt + scored - 1 (`strata logits` run on
//                      <id>.tokens.json; its last `scored` rows are the scored positions)
//   <id>.topk.bin      top-K rows instead (manifest top_k > 0): per scored position, in order,
//                      float32 log-prob of the token that follows, then top_k entries
//                      {int32 id, float32 log-prob}, by descending probability; all
//                      little-endian. Its error is explained at TopKRow (metrics.h)
//
// and reference.json, the manifest (optional for full rows, so that a directory of plain
// `strata logits` dumps works):
//
//   format      "strata-eval-reference"
//   version     1
//   n_vocab     logits per row
//   top_k       0: full rows; K: top-K rows
//   reference   how the rows were made (model, sha256, options, mode), copied into results
//   windows     [{"id", "tokens_fnv1a64", "scored"}]: the windows stored, checked against the
//               suite's
//
// When <id>.tokens.json exists it must equal the window's tokens. Without a manifest, every
// window's <id>.logits.bin must be there before anything is scored.
//
// --save-ref DIR is written as "DIR.partial-<pid>" beside DIR and renamed to DIR once its
// manifest is written, so DIR is complete or absent: an error, Ctrl-C or SIGTERM removes the
// partial directory (base/temporary_path.h), and a directory left by a crash holds no manifest
// and lacks windows, which --ref-logits refuses.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/temporary_path.h"
#include "eval/metrics.h"
#include "eval/suite.h"

namespace strata::eval {

// The reference for one window's scored positions: full rows or top-K rows.
struct ReferenceRows {
  std::vector<float> full;     // [scored][n_vocab], or empty
  std::vector<TopKRow> top_k;  // [scored], or empty
};

// Writes <id>.tokens.json for every window (the input of `strata logits`).
Status write_window_tokens(const std::string& dir, const Suite& suite,
                           const std::vector<std::vector<int32_t>>& tokens);
// The files write_window_tokens() writes.
std::vector<std::string> window_tokens_files(const std::string& dir, const Suite& suite);
// Every file a reference directory may hold for `suite`: the manifest, and each window's
// tokens, full rows and top-K rows. What ReferenceReader reads and ReferenceWriter may write.
std::vector<std::string> reference_files(const std::string& dir, const Suite& suite);

class ReferenceReader {
 public:
  // Reads the manifest when there is one; `n_vocab` is the candidate's.
  static Result<ReferenceReader> open(const std::string& dir, const Suite& suite, int64_t n_vocab);
  // `window_tokens`: the window's prompt + scored tokens.
  Result<ReferenceRows> read(const SuiteWindow& window,
                             std::span<const int32_t> window_tokens) const;
  // The manifest's "reference" object, or a note that there was no manifest.
  const nlohmann::json& description() const { return description_; }
  int top_k() const { return top_k_; }

 private:
  std::string dir_;
  int64_t n_vocab_ = 0;
  int top_k_ = 0;
  nlohmann::json description_;
};

class ReferenceWriter {
 public:
  // top_k 0: full rows. Creates the partial directory beside `dir`. Errors: `dir` exists and is
  // not an empty directory while `replace` is false (--force), its parent does not exist. With
  // `replace`, an existing `dir` gives way to the complete new one in finish(), not before.
  static Result<ReferenceWriter> create(const std::string& dir, int64_t n_vocab, int top_k,
                                        nlohmann::json description, bool replace = false);
  // `full_rows`: [window.scored][n_vocab]; `window_tokens`: prompt + scored tokens.
  Status write(const SuiteWindow& window, std::span<const int32_t> window_tokens,
               std::span<const float> full_rows);
  // Writes the manifest and renames the directory into place (over an existing one with
  // `replace`, which is removed once the new one is in place).
  Status finish();

 private:
  std::string dir_;
  TemporaryPath partial_;  // where the files are written until finish()
  bool replace_ = false;
  int64_t n_vocab_ = 0;
  int top_k_ = 0;
  nlohmann::json description_;
  nlohmann::json windows_ = nlohmann::json::array();
};

}  // namespace strata::eval
