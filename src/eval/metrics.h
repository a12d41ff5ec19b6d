// How far a candidate's next-token distribution is from a reference's, position by position,
// and the summaries `strata eval` reports. Everything is computed in double precision from the
// float32 logits (a softmax over 150k float32 terms loses ~1e-4 relative to rounding).
//
// Per scored position, with P the reference's and Q the candidate's softmax distribution and
// t the token that actually follows:
//   kld        KL(P || Q) = sum_i P_i (log P_i - log Q_i), in nats
//   top1_agree argmax P == argmax Q (ties go to the lowest id, in both)
//   ref_nll    -log P_t, cand_nll -log Q_t (perplexity = exp of their mean)
//   delta_p    Q_t - P_t (RMS Δp, as llama.cpp's perplexity tool reports it)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata::eval {

struct PositionScore {
  double kld = 0;
  bool top1_agree = false;
  double ref_nll = 0, cand_nll = 0;
  double delta_p = 0;
};

// log-softmax of `logits` in double. REQUIRES: !logits.empty(), all finite.
std::vector<double> log_softmax(std::span<const float> logits);

// REQUIRES: equal sizes; 0 <= next_token < size.
PositionScore compare_rows(std::span<const float> ref_logits, std::span<const float> cand_logits,
                           int32_t next_token);

// A reference row reduced to its top-K log-probabilities (what a stored top-K reference keeps).
// Against it, KLD is computed over K + 1 outcomes: the K tokens and "any other token", whose
// probabilities are 1 - (sum over the K) under each distribution. Merging outcomes never
// increases a KL divergence, so this is a lower bound of the full KLD; the gap is the KLD of
// the two distributions restricted to the tail, weighted by the reference's tail mass, so it is
// small when that mass is (`tail_mass` is reported for this reason). Top-1 and the reference's
// NLL are exact: the reference's argmax is the first entry, and the next token's log-prob is
// kept on its own.
struct TopKRow {
  std::vector<int32_t> ids;      // by descending probability
  std::vector<float> log_probs;  // of ids
  float next_log_prob = 0;       // log P_t of the token that follows
  double tail_mass() const;      // 1 - sum of exp(log_probs), at least 0
};

// REQUIRES: 1 <= k <= logits.size(); 0 <= next_token < logits.size().
TopKRow top_k_row(std::span<const float> logits, int k, int32_t next_token);
// REQUIRES: ids within cand_logits; 0 <= next_token < cand_logits.size().
PositionScore compare_top_k(const TopKRow& ref, std::span<const float> cand_logits,
                            int32_t next_token);

// The q-quantile (0 <= q <= 1) of `sorted` (ascending), interpolating linearly between the
// two nearest ranks at position q * (n - 1) — the default of NumPy and R (type 7).
// REQUIRES: !sorted.empty().
double quantile(std::span<const double> sorted, double q);

// Scores of a run of positions, and what they add up to.
struct ScoreSummary {
  int64_t n = 0;
  double kld_mean = 0, kld_median = 0, kld_p90 = 0, kld_p99 = 0, kld_max = 0;
  double top1_agreement = 0;  // share of positions
  double ppl_ref = 0, ppl_cand = 0;
  double rms_delta_p = 0;
  double tail_mass_mean = 0;  // of a top-K reference; 0 for a full one
};

// REQUIRES: !scores.empty(). `tail_masses` is empty or one per score.
ScoreSummary summarize_scores(std::span<const PositionScore> scores,
                              std::span<const double> tail_masses = {});

}  // namespace strata::eval
