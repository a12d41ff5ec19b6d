#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/check.h"

namespace strata::eval {
namespace {

size_t argmax(std::span<const float> logits) {
  return size_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace

std::vector<double> log_softmax(std::span<const float> logits) {
  STRATA_CHECK(!logits.empty());
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(double(x) - max);
  const double log_normalizer = max + std::log(sum);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - log_normalizer;
  return out;
}

PositionScore compare_rows(std::span<const float> ref_logits, std::span<const float> cand_logits,
                           int32_t next_token) {
  STRATA_CHECK_EQ(ref_logits.size(), cand_logits.size());
  STRATA_CHECK(next_token >= 0 && size_t(next_token) < ref_logits.size());
  const std::vector<double> log_p = log_softmax(ref_logits);
  const std::vector<double> log_q = log_softmax(cand_logits);
  double kld = 0;
  for (size_t i = 0; i < log_p.size(); ++i) kld += std::exp(log_p[i]) * (log_p[i] - log_q[i]);
  const size_t t = size_t(next_token);
  PositionScore score;
  // Rounding can leave a divergence of a few -1e-17 for equal distributions.
  score.kld = std::max(0.0, kld);
  score.top1_agree = argmax(ref_logits) == argmax(cand_logits);
  score.ref_nll = -log_p[t];
  score.cand_nll = -log_q[t];
  score.delta_p = std::exp(log_q[t]) - std::exp(log_p[t]);
  return score;
}

double TopKRow::tail_mass() const {
  double kept = 0;
  for (float lp : log_probs) kept += std::exp(double(lp));
  return std::max(0.0, 1.0 - kept);
}

TopKRow top_k_row(std::span<const float> logits, int k, int32_t next_token) {
  STRATA_CHECK(k >= 1 && size_t(k) <= logits.size());
  STRATA_CHECK(next_token >= 0 && size_t(next_token) < logits.size());
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  // Descending logit, lower id first among equals: the first entry is the argmax compare_rows
  // uses.
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    return logits[size_t(a)] > logits[size_t(b)] ||
           (logits[size_t(a)] == logits[size_t(b)] && a < b);
  });
  const std::vector<double> log_p = log_softmax(logits);
  TopKRow row;
  for (int i = 0; i < k; ++i) {
    row.ids.push_back(order[size_t(i)]);
    row.log_probs.push_back(float(log_p[size_t(order[size_t(i)])]));
  }
  row.next_log_prob = float(log_p[size_t(next_token)]);
  return row;
}

PositionScore compare_top_k(const TopKRow& ref, std::span<const float> cand_logits,
                            int32_t next_token) {
  STRATA_CHECK(!ref.ids.empty() && ref.ids.size() == ref.log_probs.size());
  STRATA_CHECK(next_token >= 0 && size_t(next_token) < cand_logits.size());
  const std::vector<double> log_q = log_softmax(cand_logits);
  std::vector<bool> kept(log_q.size(), false);
  double kld = 0, p_kept = 0;
  for (size_t j = 0; j < ref.ids.size(); ++j) {
    const size_t i = size_t(ref.ids[j]);
    STRATA_CHECK(i < log_q.size());
    kept[i] = true;
    const double lp = ref.log_probs[j], p = std::exp(lp);
    p_kept += p;
    kld += p * (lp - log_q[i]);
  }
  // Q's tail summed directly: 1 - (Q's kept mass) cancels when that mass is near 1.
  double q_tail = 0;
  for (size_t i = 0; i < log_q.size(); ++i)
    if (!kept[i]) q_tail += std::exp(log_q[i]);
  const double p_tail = 1.0 - p_kept;
  if (p_tail > 0 && q_tail > 0) kld += p_tail * (std::log(p_tail) - std::log(q_tail));
  PositionScore score;
  score.kld = std::max(0.0, kld);
  score.top1_agree = size_t(ref.ids.front()) == argmax(cand_logits);
  score.ref_nll = -double(ref.next_log_prob);
  score.cand_nll = -log_q[size_t(next_token)];
  score.delta_p = std::exp(log_q[size_t(next_token)]) - std::exp(double(ref.next_log_prob));
  return score;
}

double quantile(std::span<const double> sorted, double q) {
  STRATA_CHECK(!sorted.empty());
  const double position = q * double(sorted.size() - 1);
  const size_t below = size_t(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - double(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

ScoreSummary summarize_scores(std::span<const PositionScore> scores,
                              std::span<const double> tail_masses) {
  STRATA_CHECK(!scores.empty());
  STRATA_CHECK(tail_masses.empty() || tail_masses.size() == scores.size());
  std::vector<double> kld;
  double kld_sum = 0, ref_nll = 0, cand_nll = 0, squared_dp = 0;
  int64_t agree = 0;
  for (const PositionScore& s : scores) {
    kld.push_back(s.kld);
    kld_sum += s.kld;
    agree += s.top1_agree;
    ref_nll += s.ref_nll;
    cand_nll += s.cand_nll;
    squared_dp += s.delta_p * s.delta_p;
  }
  std::sort(kld.begin(), kld.end());
  const double n = double(scores.size());
  ScoreSummary summary;
  summary.n = int64_t(scores.size());
  summary.kld_mean = kld_sum / n;
  summary.kld_median = quantile(kld, 0.5);
  summary.kld_p90 = quantile(kld, 0.9);
  summary.kld_p99 = quantile(kld, 0.99);
  summary.kld_max = kld.back();
  summary.top1_agreement = double(agree) / n;
  summary.ppl_ref = std::exp(ref_nll / n);
  summary.ppl_cand = std::exp(cand_nll / n);
  summary.rms_delta_p = std::sqrt(squared_dp / n);
  if (!tail_masses.empty())
    summary.tail_mass_mean =
        std::accumulate(tail_masses.begin(), tail_masses.end(), 0.0) / double(tail_masses.size());
  return summary;
}

}  // namespace strata::eval
