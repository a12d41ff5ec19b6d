#include "cpu/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <system_error>

#include "base/check.h"

namespace strata {
namespace {
// About 20 us of spinning (a pause takes 20 ns on epyc-2a, ~40 on Intel's 140-cycle
// pause): longer than the gap between two kernels of one layer, short enough that a thread
// waiting for a core another thread of ours needs (more threads than cores, or I/O threads)
// soon gets out of the way on a futex. Measured with rest(): docs/streaming-speed.md.
constexpr int kSpinIterations = 1000;
}  // namespace

int ThreadPool::default_threads() {
  return std::clamp(int(std::thread::hardware_concurrency()), 1, kMaxThreads);
}

Result<std::unique_ptr<ThreadPool>> ThreadPool::start(int n_threads) {
  if (n_threads < 1 || n_threads > kMaxThreads)
    return Status::errorf("{} compute threads: from 1 to {}", n_threads, kMaxThreads);
  std::unique_ptr<ThreadPool> pool(new ThreadPool());
  pool->workers_.reserve(size_t(n_threads - 1));
  for (int t = 1; t < n_threads; ++t) {
    try {
      pool->workers_.emplace_back([pool = pool.get(), t] { pool->worker_loop(t); });
    } catch (const std::system_error& error) {
      // The destructor stops and joins the workers started so far.
      return Status::errorf("cannot start compute thread {} of {}: {}", t + 1, n_threads,
                            error.code().message());
    }
  }
  return pool;
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  job_.fetch_add(1);
  job_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::parallel_for(int64_t n_tasks,
                              const std::function<void(int64_t index, int thread)>& task) {
  if (n_tasks <= 0) return;
  const int participants =
      size() > 1 && spare_condition_ && spare_condition_() ? size() - 1 : size();
  if (participants == 1 || n_tasks == 1) {
    for (int64_t i = 0; i < n_tasks; ++i) task(i, 0);
    return;
  }
  STRATA_CHECK_LT(n_tasks, int64_t(1) << 31);
  task_ = &task;
  n_tasks_ = n_tasks;
  unfinished_.store(int32_t(n_tasks), std::memory_order_relaxed);
  const uint32_t job = job_.load(std::memory_order_relaxed) + 1;
  // Release: a worker whose claim reads this word (or a later decrement of it) sees task_ and
  // n_tasks_.
  resting_.store(false, std::memory_order_relaxed);
  participants_.store(participants, std::memory_order_relaxed);
  claims_.store(uint64_t(job) << 32 | uint64_t(n_tasks), std::memory_order_release);
  job_.store(job, std::memory_order_release);
  job_.notify_all();
  run_tasks(job, 0);
  for (int spin = 0; spin < kSpinIterations; ++spin) {
    if (unfinished_.load(std::memory_order_acquire) == 0) break;
    _mm_pause();
  }
  for (int32_t left; (left = unfinished_.load(std::memory_order_acquire)) != 0;)
    unfinished_.wait(left, std::memory_order_acquire);
  task_ = nullptr;
}

void ThreadPool::parallel_ranges(int64_t n_items, int64_t min_items,
                                 const std::function<void(int64_t begin, int64_t end)>& body) {
  if (n_items <= 0) return;
  const int64_t n_ranges =
      std::clamp<int64_t>(n_items / std::max<int64_t>(1, min_items), 1, 4 * int64_t(size()));
  if (n_ranges == 1) return body(0, n_items);
  const int64_t per_range = (n_items + n_ranges - 1) / n_ranges;
  parallel_for((n_items + per_range - 1) / per_range, [&](int64_t range, int) {
    body(range * per_range, std::min(n_items, (range + 1) * per_range));
  });
}

void ThreadPool::run_tasks(uint32_t job, int thread) {
  const uint32_t share_divisor = 2 * uint32_t(participants_.load(std::memory_order_relaxed));
  uint64_t word = claims_.load(std::memory_order_acquire);
  for (;;) {
    const uint32_t left = uint32_t(word);
    if (uint32_t(word >> 32) != job || left == 0) return;
    // Guided: a claim takes half of a fair share of what is left, so claims are few while
    // much is left (each is a cache line bouncing between cores) and single tasks at the end
    // (the threads finish together).
    const uint32_t count = std::max<uint32_t>(1, left / share_divisor);
    if (!claims_.compare_exchange_weak(word, word - count, std::memory_order_acquire,
                                       std::memory_order_acquire))
      continue;
    const int64_t first = n_tasks_ - int64_t(left);
    for (int64_t index = first; index < first + count; ++index) (*task_)(index, thread);
    // A worker that finishes the job's last task wakes the caller, which may sleep.
    if (unfinished_.fetch_sub(int32_t(count), std::memory_order_acq_rel) == int32_t(count) &&
        thread != 0)
      unfinished_.notify_one();
    word = claims_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop(int thread) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t current = job_.load(std::memory_order_acquire);
    for (int spin = 0;
         current == seen && spin < kSpinIterations && !resting_.load(std::memory_order_relaxed);
         ++spin) {
      _mm_pause();
      current = job_.load(std::memory_order_acquire);
    }
    if (current == seen) {
      job_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = current;
    if (stopping_.load()) return;
    if (thread < participants_.load(std::memory_order_relaxed)) {
      run_tasks(current, thread);
    } else {
      job_.wait(seen, std::memory_order_acquire);  // sits the job out without spinning on its core
    }
  }
}

}  // namespace strata
