#include "lab/router_calibration.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>

#include "base/interrupt.h"
#include "cpu/cpu_backend.h"
#include "cpu/topk.h"
#include "experts/resident_expert_store.h"
#include "model/transformer.h"

namespace strata {
namespace {

// Router logits with a standard deviation of ~1.5 give a top-k of 8 out of 128 experts
// weights from ~0.05 to ~0.3, the spread trained Qwen3-MoE routers show.
constexpr double kLogitStd = 1.5;

// Records each layer's router input over a forward pass of `tokens`.
Result<std::vector<std::vector<float>>> record_router_inputs(const std::string& path,
                                                             const std::vector<int32_t>& tokens,
                                                             int n_threads) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(path));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::load(file));
  ResidentExpertStore store(model->weights().experts);
  STRATA_ASSIGN_OR_RETURN(const std::unique_ptr<Backend> backend,
                          make_cpu_backend(model->config(), model->weight_formats(), n_threads));
  Transformer transformer(model, store, *backend);
  std::vector<std::vector<float>> inputs(static_cast<size_t>(model->config().n_layer));
  transformer.set_router_input_observer([&](int layer, int64_t, std::span<const float> x) {
    inputs[size_t(layer)].assign(x.begin(), x.end());
  });
  STRATA_ASSIGN_OR_RETURN(const auto cache, backend->make_kv_cache(int64_t(tokens.size())));
  std::vector<float> logits;
  STRATA_RETURN_IF_ERROR(transformer.forward(tokens, 0, *cache, false, logits));
  return inputs;
}

// The router rows of a layer with `gains`, [n_expert][n_embd], minus their response to the mean
// router input: whatever all tokens share must not favour some experts over others.
std::vector<float> centred_router(const SyntheticWeights& weights, const SyntheticTensor& router,
                                  const std::vector<double>& mean_input) {
  const int64_t n_embd = router.shape[0], n_expert = router.shape[1];
  double mean_norm2 = 0;
  for (double m : mean_input) mean_norm2 += m * m;
  std::vector<float> rows(static_cast<size_t>(n_embd * n_expert));
  for (int64_t e = 0; e < n_expert; ++e) {
    float* row = rows.data() + e * n_embd;
    weights.fill_row(router, e, row);
    double along = 0;
    for (int64_t i = 0; i < n_embd; ++i) along += row[i] * mean_input[size_t(i)];
    const double coefficient = mean_norm2 > 0 ? along / mean_norm2 : 0;
    for (int64_t i = 0; i < n_embd; ++i)
      row[i] = float(row[i] - coefficient * mean_input[size_t(i)]);
  }
  return rows;
}

// logits[t][e] = rows[e] · x_t
std::vector<float> router_logits(const std::vector<float>& rows, const std::vector<float>& inputs,
                                 int64_t n_embd, int64_t n_tokens) {
  const int64_t n_expert = int64_t(rows.size()) / n_embd;
  std::vector<float> logits(static_cast<size_t>(n_tokens * n_expert));
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t e = 0; e < n_expert; ++e) {
      double dot = 0;
      for (int64_t i = 0; i < n_embd; ++i)
        dot += double(rows[size_t(e * n_embd + i)]) * inputs[size_t(t * n_embd + i)];
      logits[size_t(t * n_expert + e)] = float(dot);
    }
  return logits;
}

// Scales each expert's row so that its logits vary equally over the recorded inputs. Router
// inputs are not isotropic, and top-k favours the experts whose rows point where the inputs
// vary most: with random rows, those experts would take several times the mean load.
void equalize_expert_variance(std::vector<float>& rows, std::vector<float>& logits, int64_t n_embd,
                              int64_t n_tokens) {
  const int64_t n_expert = int64_t(rows.size()) / n_embd;
  for (int64_t e = 0; e < n_expert; ++e) {
    double sum2 = 0;
    for (int64_t t = 0; t < n_tokens; ++t)
      sum2 += double(logits[size_t(t * n_expert + e)]) * logits[size_t(t * n_expert + e)];
    const double scale = 1 / std::sqrt(std::max(sum2 / double(n_tokens), 1e-30));
    for (int64_t i = 0; i < n_embd; ++i) rows[size_t(e * n_embd + i)] *= float(scale);
    for (int64_t t = 0; t < n_tokens; ++t) logits[size_t(t * n_expert + e)] *= float(scale);
  }
}

double repeat_fraction(const std::vector<float>& logits, int64_t n_tokens, int64_t n_expert,
                       int k) {
  std::vector<int32_t> previous(static_cast<size_t>(k)), current(static_cast<size_t>(k));
  double repeats = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    top_k(logits.data() + t * n_expert, n_expert, k, current.data());
    if (t > 0) {
      const std::set<int32_t> before(previous.begin(), previous.end());
      for (int32_t e : current) repeats += before.count(e);
    }
    std::swap(previous, current);
  }
  return repeats / double((n_tokens - 1) * k);
}

double standard_deviation(const std::vector<float>& values) {
  double sum = 0, sum2 = 0;
  for (float v : values) {
    sum += v;
    sum2 += double(v) * v;
  }
  const double mean = sum / double(values.size());
  return std::sqrt(std::max(0.0, sum2 / double(values.size()) - mean * mean));
}

Status rewrite_tensor(const std::string& path, uint64_t offset, const std::vector<float>& values) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) return Status::errorf("{}: cannot open for writing: {}", path, std::strerror(errno));
  const size_t bytes = values.size() * sizeof(float);
  const ssize_t written = ::pwrite(fd, values.data(), bytes, off_t(offset));
  const int error = errno;
  ::close(fd);
  if (written != ssize_t(bytes))
    return Status::errorf("{}: write failed: {}", path, std::strerror(error));
  return Status();
}

}  // namespace

std::vector<int32_t> seeded_tokens(int64_t n, int64_t n_vocab, uint64_t seed) {
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  uint64_t state = seed;
  for (auto& token : tokens) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    token = int32_t((state >> 33) % uint64_t(n_vocab));
  }
  return tokens;
}

Status calibrate_routers(const std::string& path, SyntheticWeights& weights,
                         const RouterCalibration& calibration) {
  const SyntheticShape& shape = weights.shape();
  const auto tokens = seeded_tokens(calibration.n_tokens, shape.n_vocab, calibration.seed);
  STRATA_ASSIGN_OR_RETURN(const auto inputs,
                          record_router_inputs(path, tokens, calibration.n_threads));
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(path));
  const auto tensors = weights.tensors(QuantType::kF32);
  const int64_t n = calibration.n_tokens;
  for (const auto& tensor : tensors) {
    if (tensor.kind != SyntheticTensorKind::kRouter) continue;
    if (interrupted()) return interrupted_error();  // the caller removes the half-calibrated file
    const int64_t layer = tensor.layer, n_embd = tensor.shape[0], n_expert = tensor.shape[1];
    const std::vector<float>& x = inputs[size_t(layer)];
    std::vector<double> mean_input(static_cast<size_t>(n_embd), 0.0);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t i = 0; i < n_embd; ++i)
        mean_input[size_t(i)] += x[size_t(t * n_embd + i)] / double(n);
    weights.set_router_gains(layer, {1.0f, 0.0f});
    auto slow_rows = centred_router(weights, tensor, mean_input);
    weights.set_router_gains(layer, {0.0f, 1.0f});
    auto fast_rows = centred_router(weights, tensor, mean_input);
    auto slow = router_logits(slow_rows, x, n_embd, n);
    auto fast = router_logits(fast_rows, x, n_embd, n);
    equalize_expert_variance(slow_rows, slow, n_embd, n);
    equalize_expert_variance(fast_rows, fast, n_embd, n);
    double best_ratio = 1, best_error = 1e9;
    std::vector<float> mixed(slow.size());
    for (double ratio = 0.05; ratio < 20; ratio *= 1.1) {
      for (size_t i = 0; i < mixed.size(); ++i) mixed[i] = float(ratio * slow[i] + fast[i]);
      const double error = std::fabs(repeat_fraction(mixed, n, n_expert, int(shape.n_expert_used)) -
                                     calibration.target_repeat);
      if (error < best_error) {
        best_error = error;
        best_ratio = ratio;
      }
    }
    for (size_t i = 0; i < mixed.size(); ++i) mixed[i] = float(best_ratio * slow[i] + fast[i]);
    const double scale = kLogitStd / std::max(1e-12, standard_deviation(mixed));

    const gguf::TensorInfo* info = file->find_tensor(tensor.name);
    if (!info) return Status::errorf("{}: no tensor {}", path, tensor.name);
    std::vector<float> values(slow_rows.size());
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = float(scale * (best_ratio * slow_rows[i] + fast_rows[i]));
    STRATA_RETURN_IF_ERROR(rewrite_tensor(path, info->offset, values));
  }
  return Status();
}

}  // namespace strata
