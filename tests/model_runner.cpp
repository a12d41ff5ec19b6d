#include "model_runner.h"

#include <stdexcept>

#include "backend/cuda_backend.h"
#include "cpu/cpu_backend.h"
#include "model/place_weights.h"
#include "model/tensor_data.h"
#include "runtime/sampler.h"

namespace strata::testing {
namespace {
template <class T>
T value_or_throw(Result<T> result) {
  if (!result.ok()) throw std::runtime_error(result.status().message());
  return std::move(result).value();
}
void throw_if_error(const Status& status) {
  if (!status.ok()) throw std::runtime_error(status.message());
}
}  // namespace

ModelRunner::ModelRunner(const std::string& path, int n_threads, Device device) {
  auto file = value_or_throw(gguf::GgufFile::open(path));
  // Loaded as sessions load it: Q4_0 rows grouped where this CPU groups them.
  model_ =
      value_or_throw(Model::load(file, value_or_throw(load_resident_tensor_data(*file, nullptr))));
  store_ = std::make_unique<ResidentExpertStore>(model_->weights().experts);
  backend_ =
      device == Device::kCuda
          ? value_or_throw(make_cuda_backend(model_->config(), 0))
          : value_or_throw(make_cpu_backend(model_->config(), model_->weight_formats(), n_threads));
  throw_if_error(place_weights(*model_, *backend_));
}

std::vector<float> ModelRunner::logits(const std::vector<int32_t>& tokens, int64_t chunk) {
  Transformer transformer(model_, *store_, *backend_);
  const auto cache = value_or_throw(backend_->make_kv_cache(int64_t(tokens.size())));
  std::vector<float> all, part;
  for (size_t begin = 0; begin < tokens.size(); begin += size_t(chunk)) {
    const size_t n = std::min(size_t(chunk), tokens.size() - begin);
    throw_if_error(
        transformer.forward({tokens.data() + begin, n}, int64_t(begin), *cache, true, part));
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

std::vector<int32_t> ModelRunner::routes(const std::vector<int32_t>& tokens) {
  std::vector<float> router_inputs;
  return routes(tokens, router_inputs);
}

std::vector<int32_t> ModelRunner::routes(const std::vector<int32_t>& tokens,
                                         std::vector<float>& router_inputs) {
  const auto& config = model_->config();
  const int64_t n = int64_t(tokens.size()), k = config.n_expert_used;
  std::vector<int32_t> result(static_cast<size_t>(config.n_layer * n * k));
  router_inputs.assign(size_t(config.n_layer * n * config.n_embd), 0.0f);
  Transformer transformer(model_, *store_, *backend_);
  // Tokens each layer's observer has seen so far (a forward pass may come in chunks).
  std::vector<int64_t> seen(size_t(config.n_layer), 0);
  transformer.set_router_input_observer([&](int layer, int64_t n_tokens,
                                            std::span<const float> input) {
    std::copy(input.begin(), input.end(),
              router_inputs.begin() + ptrdiff_t((layer * n + seen[size_t(layer)]) * config.n_embd));
    seen[size_t(layer)] += n_tokens;
  });
  transformer.set_route_observer(
      [&](int layer, int64_t t, std::span<const int32_t> experts, std::span<const float>) {
        std::copy(experts.begin(), experts.end(), result.begin() + (layer * n + t) * k);
      });
  const auto cache = value_or_throw(backend_->make_kv_cache(n));
  std::vector<float> logits;
  throw_if_error(transformer.forward(tokens, 0, *cache, false, logits));
  return result;
}

std::vector<int32_t> ModelRunner::greedy(const std::vector<int32_t>& prompt, int n) {
  Transformer transformer(model_, *store_, *backend_);
  const auto cache = value_or_throw(backend_->make_kv_cache(int64_t(prompt.size()) + n));
  std::vector<float> logits;
  throw_if_error(transformer.forward(prompt, 0, *cache, false, logits));
  std::vector<int32_t> generated;
  for (int i = 0; i < n; ++i) {
    const int32_t next = argmax(logits);
    generated.push_back(next);
    if (i + 1 < n)
      throw_if_error(
          transformer.forward({&next, 1}, int64_t(prompt.size()) + i, *cache, false, logits));
  }
  return generated;
}

}  // namespace strata::testing
