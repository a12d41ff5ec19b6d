// Routed experts the host's CPU computes from host memory while a device computes the rest of
// their layer (--cpu-experts): the misses an arena in the device's memory leaves where they lie
// (ExpertStore::claim_on_host), instead of copying them over the bus. The CPU backend runs on a
// thread of its own, so the compute thread goes on launching the device's work meanwhile; the
// rows come back to the device before the layer's mixture (Backend::write_expert_outputs).
//
// The CPU's products are the device's bits for the formats whose CUDA kernels repeat the CPU's
// float order (cuda/matmul.cu: the 32-weight block formats and the float formats), so that the
// logits do not depend on which experts the CPU took; for the k-quants they differ in the last
// bits.
//
// Thread-safety: start() and finish() from the compute thread, in turn.
#pragma once

#include <strata/status.h>

#include <atomic>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "backend/backend.h"

namespace strata {

class HostExperts {
 public:
  // `cpu` computes on host memory (the CPU backend) with its own threads.
  static Result<std::unique_ptr<HostExperts>> create(std::unique_ptr<Backend> cpu);
  ~HostExperts();
  HostExperts(const HostExperts&) = delete;
  HostExperts& operator=(const HostExperts&) = delete;

  int n_threads() const { return cpu_->n_threads(); }
  // Starts the jobs' products on x ([n_tokens][n_embd], host memory) gathered by token_of_row
  // (Backend::gather_expert_inputs), the jobs' slices in host memory. The spans stay valid and
  // unchanged until finish().
  void start(std::span<const float> x, int64_t n_tokens, std::span<const int64_t> token_of_row,
             QuantType gate_type, QuantType up_type, QuantType down_type,
             std::span<const ExpertJob> jobs);
  // Waits for the started jobs: their output rows, one job's after another
  // (Backend::expert_outputs), valid until the next start().
  std::span<const float> finish();

 private:
  explicit HostExperts(std::unique_ptr<Backend> cpu) : cpu_(std::move(cpu)) {}
  void worker_loop();
  void compute();

  enum State : int { kIdle, kStarted, kDone, kStopping };
  std::unique_ptr<Backend> cpu_;
  std::atomic<int> state_{kIdle};
  // start()'s arguments, read by the worker.
  std::span<const float> x_;
  int64_t n_tokens_ = 0;
  std::span<const int64_t> token_of_row_;
  QuantType gate_type_ = QuantType::kF32, up_type_ = QuantType::kF32, down_type_ = QuantType::kF32;
  std::span<const ExpertJob> jobs_;
  std::span<const float> rows_;
  std::thread worker_;
};

}  // namespace strata
