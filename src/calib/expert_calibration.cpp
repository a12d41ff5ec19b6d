#include "calib/expert_calibration.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>

#include "base/progress.h"
#include "calib/float_expert.h"
#include "cpu/cpu_backend.h"
#include "cpu/thread_pool.h"
#include "experts/resident_expert_store.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "model/transformer.h"

namespace strata {
namespace {

constexpr int64_t kTokensPerChannel = 4;

std::string sha256_hex(const Model& model) {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  EVP_DigestInit_ex(context, EVP_sha256(), nullptr);
  for (const LayerWeights& layer : model.weights().layers) {
    const Matrix& router = layer.router;
    EVP_DigestUpdate(context, router.data,
                     quant_traits(router.type).row_bytes(router.n_in) * size_t(router.n_out));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context, digest, &length);
  EVP_MD_CTX_free(context);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

// One window's routing of one layer, as the observers saw it.
struct LayerRecord {
  std::vector<float> inputs;   // [n_tokens][n_embd]
  std::vector<int32_t> picks;  // [n_tokens][k]
  std::vector<float> weights;  // [n_tokens][k]
};

// Running sums of one layer, in double.
struct LayerSums {
  std::vector<double> x2, h2, weighted_norm;
  std::vector<int64_t> tokens;
};

class Collector {
 public:
  Collector(const Model& model, int64_t n_samples, int64_t total_tokens, ThreadPool& pool)
      : model_(model),
        c_(model.config()),
        pool_(pool),
        n_samples_(n_samples),
        total_tokens_(total_tokens) {
    sums_.resize(size_t(c_.n_layer));
    for (LayerSums& s : sums_) {
      s.x2.assign(size_t(c_.n_expert * c_.n_embd), 0.0);
      s.h2.assign(size_t(c_.n_expert * c_.n_ff_expert), 0.0);
      s.weighted_norm.assign(size_t(c_.n_expert), 0.0);
      s.tokens.assign(size_t(c_.n_expert), 0);
    }
    layers_.resize(size_t(c_.n_layer));
    for (LayerCalibration& l : layers_) {
      l.sample_inputs.assign(size_t(n_samples * c_.n_embd), 0.0f);
      l.sample_picks.assign(size_t(n_samples * c_.n_expert_used), 0);
      l.sample_weights.assign(size_t(n_samples * c_.n_expert_used), 0.0f);
      l.sample_outputs.assign(size_t(n_samples * c_.n_expert_used * c_.n_embd), 0.0f);
    }
    scratch_.resize(size_t(pool.size()));
  }

  // The sample a token of the text is, or -1: samples are spread evenly over all tokens.
  int64_t sample_of(int64_t token) const {
    if (n_samples_ == 0) return -1;
    const int64_t step = std::max<int64_t>(1, total_tokens_ / n_samples_);
    return token % step == 0 && token / step < n_samples_ ? token / step : -1;
  }

  // The window's layer `layer`, whose first token is token `first` of the text.
  void add(int layer, const LayerRecord& record, int64_t first) {
    const int64_t k = c_.n_expert_used, n_embd = c_.n_embd;
    const int64_t n_tokens = int64_t(record.picks.size()) / k;
    LayerCalibration& out = layers_[size_t(layer)];
    for (int64_t t = 0; t < n_tokens; ++t) {
      const int64_t s = sample_of(first + t);
      if (s < 0) continue;
      std::copy_n(record.inputs.begin() + t * n_embd, n_embd,
                  out.sample_inputs.begin() + s * n_embd);
      std::copy_n(record.picks.begin() + t * k, k, out.sample_picks.begin() + s * k);
      std::copy_n(record.weights.begin() + t * k, k, out.sample_weights.begin() + s * k);
    }
    // The (token, pick) pairs of each expert; one task per expert, so its sums have one writer.
    std::vector<std::vector<int64_t>> pairs(size_t(c_.n_expert));
    for (int64_t p = 0; p < n_tokens * k; ++p) pairs[size_t(record.picks[size_t(p)])].push_back(p);
    pool_.parallel_for(c_.n_expert, [&](int64_t e, int thread) {
      if (!pairs[size_t(e)].empty())
        add_expert(layer, int(e), record, pairs[size_t(e)], first, scratch_[size_t(thread)]);
    });
  }

  ExpertCalibration finish(std::vector<std::string> documents, int64_t n_tokens) {
    ExpertCalibration result;
    result.model = calibrated_model(model_);
    result.documents = std::move(documents);
    result.n_tokens = n_tokens;
    result.n_samples = n_samples_;
    for (int64_t l = 0; l < c_.n_layer; ++l) {
      LayerSums& s = sums_[size_t(l)];
      LayerCalibration& out = layers_[size_t(l)];
      out.tokens = s.tokens;
      out.input_mean_square.resize(s.x2.size());
      out.hidden_mean_square.resize(s.h2.size());
      out.weighted_output_norm.resize(s.weighted_norm.size());
      for (int64_t e = 0; e < c_.n_expert; ++e) {
        const double n = double(std::max<int64_t>(1, s.tokens[size_t(e)]));
        for (int64_t i = 0; i < c_.n_embd; ++i)
          out.input_mean_square[size_t(e * c_.n_embd + i)] =
              float(s.x2[size_t(e * c_.n_embd + i)] / n);
        for (int64_t i = 0; i < c_.n_ff_expert; ++i)
          out.hidden_mean_square[size_t(e * c_.n_ff_expert + i)] =
              float(s.h2[size_t(e * c_.n_ff_expert + i)] / n);
        out.weighted_output_norm[size_t(e)] = float(s.weighted_norm[size_t(e)] / n);
      }
      result.layers.push_back(std::move(out));
    }
    return result;
  }

 private:
  struct Scratch {
    FloatExpert expert;
    std::vector<float> hidden, output;
  };

  void add_expert(int layer, int e, const LayerRecord& record, const std::vector<int64_t>& pairs,
                  int64_t first, Scratch& scratch) {
    scratch.expert.load(model_.weights().experts.layers[size_t(layer)], e);
    const int64_t n_embd = c_.n_embd, n_ff = c_.n_ff_expert, k = c_.n_expert_used;
    scratch.hidden.resize(size_t(n_ff));
    scratch.output.resize(size_t(n_embd));
    LayerSums& sums = sums_[size_t(layer)];
    double* x2 = sums.x2.data() + e * n_embd;
    double* h2 = sums.h2.data() + e * n_ff;
    for (const int64_t p : pairs) {
      const int64_t t = p / k;
      const float* x = record.inputs.data() + t * n_embd;
      for (int64_t i = 0; i < n_embd; ++i) x2[i] += double(x[i]) * x[i];
      scratch.expert.compute(x, scratch.hidden.data(), scratch.output.data());
      for (int64_t f = 0; f < n_ff; ++f)
        h2[f] += double(scratch.hidden[size_t(f)]) * scratch.hidden[size_t(f)];
      double norm2 = 0.0;
      for (float v : scratch.output) norm2 += double(v) * v;
      sums.weighted_norm[size_t(e)] += double(record.weights[size_t(p)]) * std::sqrt(norm2);
      ++sums.tokens[size_t(e)];
      if (const int64_t s = sample_of(first + t); s >= 0) {
        const int64_t slot = s * k + p % k;
        std::copy(scratch.output.begin(), scratch.output.end(),
                  layers_[size_t(layer)].sample_outputs.begin() + slot * n_embd);
      }
    }
  }

  const Model& model_;
  const ModelConfig& c_;
  ThreadPool& pool_;
  const int64_t n_samples_, total_tokens_;
  std::vector<LayerSums> sums_;
  std::vector<LayerCalibration> layers_;
  std::vector<Scratch> scratch_;
};

}  // namespace

std::span<const float> ExpertCalibration::input_mean_square(int layer, int expert) const {
  const size_t n = size_t(model.n_embd);
  return std::span(layers[size_t(layer)].input_mean_square).subspan(size_t(expert) * n, n);
}

std::span<const float> ExpertCalibration::hidden_mean_square(int layer, int expert) const {
  const size_t n = size_t(model.n_ff);
  return std::span(layers[size_t(layer)].hidden_mean_square).subspan(size_t(expert) * n, n);
}

CalibratedModel calibrated_model(const Model& model) {
  const ModelConfig& c = model.config();
  return {c.arch,     c.n_layer,       c.n_embd,         c.n_ff_expert,
          c.n_expert, c.n_expert_used, sha256_hex(model)};
}

Result<CalibratedModel> calibrated_model(const std::string& model_path) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(model_path));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::load(file));
  return calibrated_model(*model);
}

Result<ExpertCalibration> calibrate_experts(const std::string& model_path,
                                            const std::vector<std::vector<int32_t>>& sequences,
                                            std::vector<std::string> documents,
                                            const CalibrationOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::open(model_path));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::load(file));
  STRATA_RETURN_IF_ERROR(check_experts_readable(*model));
  const ModelConfig& c = model->config();
  int64_t total = 0;
  for (const auto& sequence : sequences) total += int64_t(sequence.size());
  const int64_t widest = std::max(c.n_embd, c.n_ff_expert);
  if (total < kTokensPerChannel * widest)
    return Status::errorf(
        "calibrate: the text gives {} tokens; at least {} are needed ({} per channel of the "
        "widest expert input, {})",
        total, kTokensPerChannel * widest, kTokensPerChannel, widest);
  const int n_threads = options.n_threads > 0 ? options.n_threads : ThreadPool::default_threads();
  ResidentExpertStore store(model->weights().experts);
  STRATA_ASSIGN_OR_RETURN(const std::unique_ptr<Backend> backend,
                          make_cpu_backend(c, model->weight_formats(), n_threads));
  STRATA_ASSIGN_OR_RETURN(const auto pool, ThreadPool::start(n_threads));
  Transformer transformer(model, store, *backend);
  std::vector<LayerRecord> records(size_t(c.n_layer));
  transformer.set_router_input_observer([&](int layer, int64_t, std::span<const float> x) {
    records[size_t(layer)].inputs.assign(x.begin(), x.end());
  });
  transformer.set_route_observer(
      [&](int layer, int64_t t, std::span<const int32_t> picks, std::span<const float> weights) {
        LayerRecord& r = records[size_t(layer)];
        if (t == 0) r.picks.clear(), r.weights.clear();
        r.picks.insert(r.picks.end(), picks.begin(), picks.end());
        r.weights.insert(r.weights.end(), weights.begin(), weights.end());
      });
  const int64_t window =
      std::clamp<int64_t>(options.window, 1, std::max<int64_t>(1, c.n_ctx_train));
  STRATA_ASSIGN_OR_RETURN(const auto cache, backend->make_kv_cache(window));
  Collector collector(*model, std::min(options.n_samples, total), total, *pool);
  std::vector<float> logits;
  int64_t done = 0;
  for (const auto& sequence : sequences) {
    for (size_t start = 0; start < sequence.size(); start += size_t(window)) {
      const size_t n = std::min(sequence.size() - start, size_t(window));
      STRATA_RETURN_IF_ERROR(
          transformer.forward(std::span(sequence).subspan(start, n), 0, *cache, false, logits));
      for (int l = 0; l < int(c.n_layer); ++l) collector.add(l, records[size_t(l)], done);
      done += int64_t(n);
      if (options.progress) options.progress->advance(n);
    }
  }
  return collector.finish(std::move(documents), done);
}

}  // namespace strata
