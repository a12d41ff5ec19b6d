// Teacher-forced scoring of a candidate against a reference over the windows of a suite.
//
// A window of prompt + scored tokens is fed to a model, and the logits at its scored positions
// (after tokens prompt - 1 ... prompt + scored - 2) are compared with the reference's, row by
// row (metrics.h). Two ways to get those logits:
//   * decode (default): the first prompt - 1 tokens as one prefill, then every further token
//     one at a time through Session::feed, reading Session::logits() after each. Every scored
//     row comes from a single-token decode step, with the expert arena in its decode state: the
//     only way the cost of cache-aware routing (--moce) or a small arena (--mem, --arena) shows.
//   * batch: the window's first prompt + scored - 1 tokens through
//     Session::feed_teacher_forced in prefill chunks; much faster, for knobs that do not touch
//     routing (a quantized file).
// One candidate session serves every window (reset between them), so its arena carries its
// contents from window to window, as a long-running process's would.
#pragma once

#include <strata/session.h>
#include <strata/status.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/metrics.h"
#include "eval/suite.h"

namespace strata::eval {

enum class ScoringMode { kDecode, kBatch };
const char* mode_name(ScoringMode mode);

// The logits of a window's scored positions: [window.scored][n_vocab]. Resets the session.
Status scored_logits(Session& session, std::span<const int32_t> window_tokens, int64_t prompt,
                     ScoringMode mode, std::vector<float>& rows);

struct ScoringConfig {
  SessionOptions candidate;
  ScoringMode mode = ScoringMode::kDecode;
  // The reference: a model evaluated here (in reference_mode), or stored logits.
  std::optional<SessionOptions> reference_model;
  ScoringMode reference_mode = ScoringMode::kDecode;
  std::string reference_logits_dir;
  // Where to store the reference's rows (reference_logits.h); only with a reference model.
  std::string save_reference_dir;
  bool replace_saved_reference = false;  // --force: an existing directory is replaced
  // 0: full rows; K: top-K rows; -1: full rows for vocabularies up to kFullRowsMaxVocab, else
  // top-kDefaultTopK.
  int save_top_k = -1;
};

// A full row of 65,536 float32 logits is 256 KiB: 1 GiB per 4,096 scored positions. Qwen3's
// 151,936 would take 594 KiB a row; its top-256 take 2 KiB.
constexpr int64_t kFullRowsMaxVocab = 65536;
constexpr int kDefaultTopK = 256;

struct WindowScores {
  std::vector<PositionScore> positions;  // [scored]
  std::vector<double> tail_masses;       // [scored] with a top-K reference, else empty
};

// The candidate session's counters over the whole run; decode_experts over decode steps only.
struct CandidateStats {
  int64_t prefill_tokens = 0, decode_tokens = 0;
  double prefill_ms = 0, decode_ms = 0;
  ExpertCounters decode_experts;
  std::string description;  // Session::describe()
};

struct ScoringResult {
  std::vector<WindowScores> windows;  // suite order
  int64_t n_vocab = 0;
  nlohmann::json candidate_model;  // describe_model
  nlohmann::json reference;        // how the reference rows were made
  CandidateStats candidate;
};

// `tokens[i]`: window i's prompt + scored tokens (load_window_tokens). `progress` gets a line
// per window.
Result<ScoringResult> score_suite(const Suite& suite,
                                  const std::vector<std::vector<int32_t>>& tokens,
                                  const ScoringConfig& config,
                                  const std::function<void(const std::string&)>& progress);

// The options that change a model's logits, with the model file's SHA-256, for records.
Result<nlohmann::json> describe_model(const SessionOptions& options, ScoringMode mode);

}  // namespace strata::eval
