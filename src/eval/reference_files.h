// The formats of a reference directory's files (reference_logits.h describes the directory),
// parsed from their bytes so that any text or bytes give a result or one error line naming
// `path`; fuzz/eval_files_fuzz.cpp holds them to that.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/metrics.h"
#include "eval/suite.h"

namespace strata::eval {

inline constexpr const char* kReferenceFormat = "strata-eval-reference";
inline constexpr int kReferenceVersion = 1;

struct ReferenceManifest {
  int top_k = 0;               // 0: full rows
  nlohmann::json description;  // the manifest's "reference" object ({} if it has none)
};

// reference.json's text, checked against the suite (every window stored, for its tokens) and
// the candidate's vocabulary.
Result<ReferenceManifest> parse_reference_manifest(const std::string& text, const std::string& path,
                                                   const Suite& suite, int64_t n_vocab);

// One window's <id>.logits.bin: `scored` rows of n_vocab float32 logits, or `fed` rows (a
// `strata logits` dump of <window_id>.tokens.json) of which the last `scored` are returned;
// every logit finite.
Result<std::vector<float>> parse_full_rows(const std::string& bytes, const std::string& path,
                                           int64_t scored, int64_t fed, int64_t n_vocab,
                                           const std::string& window_id);

// One window's <id>.topk.bin: `scored` rows of top_k entries, each entry's id inside the
// vocabulary, ids distinct, log-probs at most 0 and not increasing, the next token's log-prob
// finite and at most 0. REQUIRES: top_k >= 1.
Result<std::vector<TopKRow>> parse_top_k_rows(const std::string& bytes, const std::string& path,
                                              int64_t scored, int top_k, int64_t n_vocab);

}  // namespace strata::eval
