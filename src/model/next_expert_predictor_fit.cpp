#include "model/next_expert_predictor_fit.h"

#include <cmath>

#include "base/check.h"
#include "model/next_expert_predictor.h"

namespace strata {
namespace {

// In-place Cholesky factor (lower) of the symmetric positive definite n x n matrix `m` (lower
// triangle read); false if it is not positive definite.
bool cholesky(std::vector<double>& m, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = m[size_t(j * n + j)];
    for (int64_t k = 0; k < j; ++k) d -= m[size_t(j * n + k)] * m[size_t(j * n + k)];
    if (!(d > 0)) return false;
    const double root = std::sqrt(d);
    m[size_t(j * n + j)] = root;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = m[size_t(i * n + j)];
      for (int64_t k = 0; k < j; ++k) s -= m[size_t(i * n + k)] * m[size_t(j * n + k)];
      m[size_t(i * n + j)] = s / root;
    }
  }
  return true;
}

// Solves L L^T z = rhs in place.
void cholesky_solve(const std::vector<double>& l, int64_t n, std::span<double> rhs) {
  for (int64_t i = 0; i < n; ++i) {
    double s = rhs[size_t(i)];
    for (int64_t k = 0; k < i; ++k) s -= l[size_t(i * n + k)] * rhs[size_t(k)];
    rhs[size_t(i)] = s / l[size_t(i * n + i)];
  }
  for (int64_t i = n - 1; i >= 0; --i) {
    double s = rhs[size_t(i)];
    for (int64_t k = i + 1; k < n; ++k) s -= l[size_t(k * n + i)] * rhs[size_t(k)];
    rhs[size_t(i)] = s / l[size_t(i * n + i)];
  }
}

}  // namespace

NextExpertPredictorFit::NextExpertPredictorFit(int64_t n_layer, int64_t n_embd, int64_t n_expert,
                                               int64_t horizon)
    : n_layer_(n_layer), n_embd_(n_embd), n_expert_(n_expert), horizon_(horizon) {
  STRATA_CHECK(n_layer >= 1 && n_embd >= 1 && n_expert >= 1);
  STRATA_CHECK(horizon >= 1 && horizon <= NextExpertPredictor::kMaxHorizon);
  const size_t n = size_t(n_embd + 1);
  gram_.assign(size_t(n_layer), std::vector<double>(n * n, 0.0));
  targets_.assign(size_t(n_layer), std::vector<double>(size_t(horizon * n_expert) * n, 0.0));
  samples_.assign(size_t(n_layer), 0);
}

void NextExpertPredictorFit::add(int layer, std::span<const float> x,
                                 std::span<const std::span<const int32_t>> picks_ahead) {
  STRATA_CHECK(layer >= 0 && layer < n_layer_);
  STRATA_CHECK_EQ(x.size(), size_t(n_embd_));
  STRATA_CHECK_EQ(picks_ahead.size(), size_t(horizon_));
  const int64_t n = n_embd_ + 1;
  std::vector<double> a(x.begin(), x.end());
  a.push_back(1.0);
  std::vector<double>& gram = gram_[size_t(layer)];
  for (int64_t i = 0; i < n; ++i) {
    const double ai = a[size_t(i)];
    double* row = gram.data() + i * n;
    for (int64_t j = i; j < n; ++j) row[j] += ai * a[size_t(j)];
  }
  for (int64_t s = 0; s < horizon_; ++s) {
    for (int32_t e : picks_ahead[size_t(s)]) {
      STRATA_CHECK(e >= 0 && e < n_expert_);
      double* target = targets_[size_t(layer)].data() + size_t(s * n_expert_ + e) * size_t(n);
      for (int64_t i = 0; i < n; ++i) target[i] += a[size_t(i)];
    }
  }
  ++samples_[size_t(layer)];
}

Result<NextExpertPredictorFit::Solution> NextExpertPredictorFit::solve(double ridge) const {
  const int64_t n = n_embd_ + 1;
  Solution solution;
  const int64_t n_scores = horizon_ * n_expert_;
  solution.weights.reserve(size_t(n_layer_ * n_scores * n_embd_));
  solution.biases.reserve(size_t(n_layer_ * n_scores));
  for (int64_t layer = 0; layer < n_layer_; ++layer) {
    if (samples_[size_t(layer)] < 2)
      return Status::errorf("layer {} has {} samples; fitting needs more text", layer,
                            samples_[size_t(layer)]);
    std::vector<double> m = gram_[size_t(layer)];
    double diagonal = 0;
    for (int64_t i = 0; i < n_embd_; ++i) diagonal += m[size_t(i * n + i)];
    const double lambda = ridge * diagonal / double(n_embd_);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < i; ++j) m[size_t(i * n + j)] = m[size_t(j * n + i)];
      if (i < n_embd_) m[size_t(i * n + i)] += lambda;
    }
    if (!cholesky(m, n))
      return Status::errorf("layer {}: the router inputs do not determine a fit (singular)", layer);
    for (int64_t score = 0; score < n_scores; ++score) {
      const double* target = targets_[size_t(layer)].data() + size_t(score * n);
      std::vector<double> z(target, target + n);
      cholesky_solve(m, n, z);
      for (int64_t i = 0; i < n_embd_; ++i) solution.weights.push_back(float(z[size_t(i)]));
      solution.biases.push_back(float(z[size_t(n_embd_)]));
    }
  }
  return solution;
}

}  // namespace strata
