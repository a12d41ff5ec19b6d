#include "cpu/thread_pool.h"

#include <immintrin.h>

#include "base/check.h"

namespace strata {
namespace {
// A few microseconds of spinning (pause is ~40-140 cycles): longer than the gap between two
// kernels of one layer, short enough that a thread waiting for a core another thread of ours
// needs (more threads than cores, or I/O threads) soon gets out of the way on a futex.
constexpr int kSpinIterations = 2000;
}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  STRATA_CHECK(n_threads >= 1);
  for (int t = 1; t < n_threads; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::parallel_for(int64_t n_tasks,
                              const std::function<void(int64_t index, int thread)>& task) {
  if (n_tasks <= 0) return;
  if (workers_.empty() || n_tasks == 1) {
    for (int64_t i = 0; i < n_tasks; ++i) task(i, 0);
    return;
  }
  task_ = &task;
  n_tasks_ = n_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  busy_workers_.store(int(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  run_tasks(0);
  for (int spin = 0; spin < kSpinIterations; ++spin) {
    if (busy_workers_.load(std::memory_order_acquire) == 0) break;
    _mm_pause();
  }
  for (int busy; (busy = busy_workers_.load(std::memory_order_acquire)) != 0;)
    busy_workers_.wait(busy, std::memory_order_acquire);
  task_ = nullptr;
}

void ThreadPool::run_tasks(int thread) {
  for (;;) {
    const int64_t index = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (index >= n_tasks_) return;
    (*task_)(index, thread);
  }
}

void ThreadPool::worker_loop(int thread) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t current = generation_.load(std::memory_order_acquire);
    for (int spin = 0; current == seen && spin < kSpinIterations; ++spin) {
      _mm_pause();
      current = generation_.load(std::memory_order_acquire);
    }
    if (current == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = current;
    if (stopping_.load()) return;
    run_tasks(thread);
    if (busy_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) busy_workers_.notify_one();
  }
}

}  // namespace strata
