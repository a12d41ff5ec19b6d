#include "eval/scoring.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/check.h"
#include "base/interrupt.h"
#include "eval/reference_logits.h"
#include "lab/provenance.h"

namespace strata::eval {
namespace {

// Opens a session whose context holds the suite's longest window (unless one was asked for).
Result<std::unique_ptr<Session>> open_session(SessionOptions requested, const Suite& suite,
                                              ScoringMode mode) {
  SessionOptions options = without_plan_notes(std::move(requested));
  int64_t longest = 0;
  for (const SuiteWindow& w : suite.windows) longest = std::max(longest, w.length());
  if (options.n_ctx == 0) options.n_ctx = longest;
  options.teacher_forced = mode == ScoringMode::kBatch;
  STRATA_ASSIGN_OR_RETURN(auto session, Session::open(options));
  if (session->n_ctx() < longest)
    return Status::errorf("{}: context of {} tokens; the suite's windows need {} (--ctx)",
                          options.model_path, session->n_ctx(), longest);
  return session;
}

// The reference's rows for one window, from a model or from storage.
struct ReferenceSource {
  std::unique_ptr<Session> session;
  ScoringMode mode = ScoringMode::kDecode;
  std::optional<ReferenceReader> reader;
  std::optional<ReferenceWriter> writer;

  Result<ReferenceRows> rows(const SuiteWindow& w, std::span<const int32_t> tokens) {
    if (reader) return reader->read(w, tokens);
    ReferenceRows rows;
    STRATA_RETURN_IF_ERROR(scored_logits(*session, tokens, w.prompt, mode, rows.full));
    if (writer) STRATA_RETURN_IF_ERROR(writer->write(w, tokens, rows.full));
    return rows;
  }
};

Result<ReferenceSource> open_reference(const ScoringConfig& config, const Suite& suite,
                                       int64_t n_vocab, nlohmann::json& description) {
  ReferenceSource source;
  if (!config.reference_model) {
    STRATA_ASSIGN_OR_RETURN(auto reader,
                            ReferenceReader::open(config.reference_logits_dir, suite, n_vocab));
    description = reader.description();
    source.reader = std::move(reader);
    return source;
  }
  source.mode = config.reference_mode;
  STRATA_ASSIGN_OR_RETURN(source.session,
                          open_session(*config.reference_model, suite, config.reference_mode));
  if (source.session->engine().n_vocab() != n_vocab)
    return Status::errorf("{}: {} logits per token, the candidate has {}",
                          config.reference_model->model_path, source.session->engine().n_vocab(),
                          n_vocab);
  STRATA_ASSIGN_OR_RETURN(description,
                          describe_model(*config.reference_model, config.reference_mode));
  if (!config.save_reference_dir.empty()) {
    const int top_k = config.save_top_k >= 0         ? config.save_top_k
                      : n_vocab <= kFullRowsMaxVocab ? 0
                                                     : kDefaultTopK;
    if (top_k > n_vocab)
      return Status::errorf("--save-ref-top-k {}: the vocabulary has {} tokens", top_k, n_vocab);
    STRATA_ASSIGN_OR_RETURN(
        auto writer, ReferenceWriter::create(config.save_reference_dir, n_vocab, top_k, description,
                                             config.replace_saved_reference));
    source.writer = std::move(writer);
  }
  return source;
}

WindowScores score_window(const ReferenceRows& reference, std::span<const float> candidate,
                          std::span<const int32_t> tokens, const SuiteWindow& w, int64_t n_vocab) {
  WindowScores scores;
  for (int64_t j = 0; j < w.scored; ++j) {
    const int32_t next = tokens[size_t(w.prompt + j)];
    const auto row = candidate.subspan(size_t(j * n_vocab), size_t(n_vocab));
    if (reference.top_k.empty()) {
      const auto ref =
          std::span<const float>(reference.full).subspan(size_t(j * n_vocab), size_t(n_vocab));
      scores.positions.push_back(compare_rows(ref, row, next));
    } else {
      scores.positions.push_back(compare_top_k(reference.top_k[size_t(j)], row, next));
      scores.tail_masses.push_back(reference.top_k[size_t(j)].tail_mass());
    }
  }
  return scores;
}

CandidateStats candidate_stats(const Session& session) {
  const SessionStats& stats = session.stats();
  CandidateStats out;
  out.prefill_tokens = stats.prefill_tokens;
  out.prefill_ms = stats.prefill_ms;
  out.decode_tokens = stats.decode_tokens;
  out.decode_ms = stats.decode_ms;
  out.decode_experts = stats.decode_experts();
  out.description = session.engine().describe();
  return out;
}

}  // namespace

const char* mode_name(ScoringMode mode) { return mode == ScoringMode::kBatch ? "batch" : "decode"; }

Status scored_logits(Session& session, std::span<const int32_t> window_tokens, int64_t prompt,
                     ScoringMode mode, std::vector<float>& rows) {
  STRATA_CHECK(prompt >= 1 && size_t(prompt) < window_tokens.size());
  const size_t n_vocab = size_t(session.engine().n_vocab());
  const size_t scored = window_tokens.size() - size_t(prompt);
  session.reset();
  if (mode == ScoringMode::kBatch) {
    STRATA_RETURN_IF_ERROR(
        session.feed_teacher_forced(window_tokens.first(window_tokens.size() - 1), rows));
    rows.erase(rows.begin(), rows.end() - ptrdiff_t(scored * n_vocab));
    return Status();
  }
  rows.clear();
  if (prompt > 1) STRATA_RETURN_IF_ERROR(session.feed(window_tokens.first(size_t(prompt - 1))));
  for (size_t j = 0; j < scored; ++j) {
    if (interrupted()) return interrupted_error();
    STRATA_RETURN_IF_ERROR(session.feed(window_tokens.subspan(size_t(prompt) - 1 + j, 1)));
    const auto logits = session.logits();
    rows.insert(rows.end(), logits.begin(), logits.end());
  }
  return Status();
}

Result<nlohmann::json> describe_model(const SessionOptions& o, ScoringMode mode) {
  STRATA_ASSIGN_OR_RETURN(const std::string sha256, sha256_model(o.model_path));
  nlohmann::json json = {{"model", {{"path", o.model_path}, {"sha256", sha256}}},
                         {"mode", mode_name(mode)},
                         {"memory_budget_bytes", o.memory_budget},
                         {"arena_share", o.memory_budget > 0 ? 0.0 : o.arena_share},
                         {"moce_bonus", o.moce_bonus},
                         {"moce_protect", o.moce_protect},
                         {"prefill_chunk", o.prefill_chunk},
                         {"n_ctx", o.n_ctx}};
  if (streams_experts(o)) {
    json["cache_policy"] = o.cache_policy;
    json["readahead"] = o.readahead;
    json["readahead_layers"] = o.readahead_layers;
    json["readahead_far"] = o.readahead_far;
    json["readahead_budget"] = o.readahead_budget;
    json["io_backend"] = o.io_backend;
    json["io_threads"] = o.io_threads;
    json["io_depth"] = o.io_depth;
    json["warm_path"] = o.warm_path;
  }
  return json;
}

Result<ScoringResult> score_suite(const Suite& suite,
                                  const std::vector<std::vector<int32_t>>& tokens,
                                  const ScoringConfig& config,
                                  const std::function<void(const std::string&)>& progress) {
  STRATA_CHECK_EQ(tokens.size(), suite.windows.size());
  ScoringResult result;
  // The candidate first: under --mem its memory plan measures the process before anything
  // else is loaded.
  STRATA_ASSIGN_OR_RETURN(auto candidate, open_session(config.candidate, suite, config.mode));
  result.n_vocab = candidate->engine().n_vocab();
  STRATA_ASSIGN_OR_RETURN(result.candidate_model, describe_model(config.candidate, config.mode));
  STRATA_ASSIGN_OR_RETURN(ReferenceSource reference,
                          open_reference(config, suite, result.n_vocab, result.reference));
  candidate->reset_stats();
  std::vector<float> rows;
  for (size_t i = 0; i < suite.windows.size(); ++i) {
    // Ctrl-C or SIGTERM: the reference being saved is removed (reference_logits.h).
    if (interrupted()) return interrupted_error();
    const SuiteWindow& w = suite.windows[i];
    STRATA_ASSIGN_OR_RETURN(const ReferenceRows ref, reference.rows(w, tokens[i]));
    STRATA_RETURN_IF_ERROR(scored_logits(*candidate, tokens[i], w.prompt, config.mode, rows)
                               .with_prefix(fmt::format("window {}", w.id)));
    result.windows.push_back(score_window(ref, rows, tokens[i], w, result.n_vocab));
    const ScoreSummary s = summarize_scores(result.windows.back().positions);
    progress(fmt::format("{}/{} {}: mean KLD {:.5f}, top-1 {:.1f} %, PPL {:.2f} -> {:.2f}", i + 1,
                         suite.windows.size(), w.id, s.kld_mean, 100 * s.top1_agreement, s.ppl_ref,
                         s.ppl_cand));
  }
  if (reference.writer) STRATA_RETURN_IF_ERROR(reference.writer->finish());
  result.candidate = candidate_stats(*candidate);
  return result;
}

}  // namespace strata::eval
