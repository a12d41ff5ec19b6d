#include "model/host_experts.h"

#include <chrono>

#include "base/check.h"

namespace strata {
namespace {

// How long either side spins for the other before it sleeps: a decode layer's hand-over comes
// every few hundred microseconds, and a futex wake-up costs tens of them.
constexpr auto kSpin = std::chrono::microseconds(2000);

// Waits until state != from, spinning first.
int wait_while(std::atomic<int>& state, int from) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    const int now = state.load(std::memory_order_acquire);
    if (now != from) return now;
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
  }
  state.wait(from, std::memory_order_acquire);
  return state.load(std::memory_order_acquire);
}

}  // namespace

Result<std::unique_ptr<HostExperts>> HostExperts::create(std::unique_ptr<Backend> cpu) {
  STRATA_CHECK(!cpu->computes_from_own_memory());
  auto experts = std::unique_ptr<HostExperts>(new HostExperts(std::move(cpu)));
  try {
    experts->worker_ = std::thread([raw = experts.get()] { raw->worker_loop(); });
  } catch (const std::system_error& error) {
    return Status::errorf("starting the thread of the experts the CPU computes: {}", error.what());
  }
  return experts;
}

HostExperts::~HostExperts() {
  state_.store(kStopping, std::memory_order_release);
  state_.notify_all();
  worker_.join();
}

void HostExperts::start(std::span<const float> x, int64_t n_tokens,
                        std::span<const int64_t> token_of_row, QuantType gate_type,
                        QuantType up_type, QuantType down_type, std::span<const ExpertJob> jobs) {
  STRATA_CHECK_EQ(state_.load(std::memory_order_relaxed), int(kIdle));
  x_ = x;
  n_tokens_ = n_tokens;
  token_of_row_ = token_of_row;
  gate_type_ = gate_type;
  up_type_ = up_type;
  down_type_ = down_type;
  jobs_ = jobs;
  state_.store(kStarted, std::memory_order_release);
  state_.notify_all();
}

std::span<const float> HostExperts::finish() {
  STRATA_CHECK(state_.load(std::memory_order_relaxed) != kIdle);
  wait_while(state_, kStarted);
  state_.store(kIdle, std::memory_order_relaxed);
  return rows_;
}

void HostExperts::worker_loop() {
  for (int state = kIdle;; state = wait_while(state_, state)) {
    if (state == kStopping) return;
    if (state != kStarted) continue;
    compute();
    state_.store(kDone, std::memory_order_release);
    state_.notify_all();
    state = kDone;
  }
}

void HostExperts::compute() {
  BatchActivations& batch = cpu_->begin_batch(n_tokens_);
  cpu_->load_rows(x_, batch.normed);
  cpu_->gather_expert_inputs(batch.normed, token_of_row_, gate_type_, up_type_, down_type_);
  cpu_->compute_experts(jobs_);
  rows_ = cpu_->expert_outputs(jobs_);
}

}  // namespace strata
