// A fixed pool of compute threads for the kernels. The caller's thread is one of the pool's
// threads, so ThreadPool(1) runs everything inline.
//
// parallel_for hands out task indices from one atomic counter. Which thread runs which task is
// timing-dependent, so kernels must make each task's result independent of the thread that runs
// it (they do: a task owns whole output rows and sums them in a fixed order). That is what
// keeps logits bit-identical across thread counts.
//
// Thread-safety: one parallel_for at a time (the session's compute thread). Workers spin briefly
// after a job (kernels come in quick succession), then sleep on a futex so they never burn a
// core that the I/O threads need.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace strata {

class ThreadPool {
 public:
  // n_threads >= 1, the caller included.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Calls task(index, thread) for every index in [0, n_tasks); returns when all have run.
  // `thread` is in [0, size()) and may index per-thread scratch.
  void parallel_for(int64_t n_tasks, const std::function<void(int64_t index, int thread)>& task);

 private:
  void worker_loop(int thread);
  void run_tasks(int thread);

  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int)>* task_ = nullptr;
  int64_t n_tasks_ = 0;
  std::atomic<int64_t> next_task_{0};
  std::atomic<uint32_t> generation_{0};  // bumped to start a job (and to stop)
  std::atomic<int> busy_workers_{0};     // workers still inside the current job
  std::atomic<bool> stopping_{false};
};

}  // namespace strata
