// Runs a model file through the forward pass for tests, on the CPU or a GPU: teacher-forced
// logits in chunks of any size, the routes chosen, and greedy continuations.
#pragma once

#include <strata/status.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "experts/resident_expert_store.h"
#include "model/model.h"
#include "model/transformer.h"

namespace strata::testing {

enum class Device { kCpu, kCuda };

class ModelRunner {
 public:
  // On the CPU with n_threads threads, or on CUDA device 0 (throws where there is none).
  explicit ModelRunner(const std::string& path, int n_threads = 2, Device device = Device::kCpu);

  const Model& model() const { return *model_; }
  int64_t n_vocab() const { return model_->config().n_vocab; }

  // Logits after each token ([n][n_vocab]), feeding the sequence in chunks of `chunk` tokens.
  std::vector<float> logits(const std::vector<int32_t>& tokens, int64_t chunk);
  // Routes as the golden route.bin files hold them: [n_layer][n_tokens][k].
  std::vector<int32_t> routes(const std::vector<int32_t>& tokens);
  // The same routes, and each layer's router input ([n_layer][n_tokens][n_embd]).
  std::vector<int32_t> routes(const std::vector<int32_t>& tokens,
                              std::vector<float>& router_inputs);
  // Greedy continuation of `prompt`, n tokens.
  std::vector<int32_t> greedy(const std::vector<int32_t>& prompt, int n);

 private:
  std::shared_ptr<const Model> model_;
  std::unique_ptr<ResidentExpertStore> store_;
  std::unique_ptr<Backend> backend_;
};

}  // namespace strata::testing
