// A fixed pool of compute threads for the kernels. The caller's thread is one of the pool's
// threads, so ThreadPool(1) runs everything inline.
//
// parallel_for hands out runs of task indices from one atomic word tagged with the job's number
// (guided: long runs while much is left, single tasks at the end). Which
// thread runs which task is timing-dependent, so kernels must make each task's result
// independent of the thread that runs it (they do: a task owns whole output rows and sums them
// in a fixed order). That is what keeps logits bit-identical across thread counts.
//
// A job ends when all its tasks have run, whoever ran them: a worker that is asleep or has lost
// its core (to an I/O thread, say) when a job starts does not hold the caller up, and a late
// worker finds the job's word exhausted or re-tagged and claims nothing of it.
//
// Thread-safety: one parallel_for at a time (the session's compute thread). Workers spin briefly
// after a job (kernels come in quick succession), then sleep on a futex so they never burn a
// core that the I/O threads need.
#pragma once

#include <strata/status.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace strata {

class ThreadPool {
 public:
  // At most this many threads, the caller included: ggml's GGML_MAX_N_THREADS.
  static constexpr int kMaxThreads = 512;

  // n_threads, the caller included: 1 to kMaxThreads, else an error. An error also names the
  // thread that could not start (the system's limit on threads, or on memory for their
  // stacks); the ones started are stopped.
  static Result<std::unique_ptr<ThreadPool>> start(int n_threads);
  // One per core, at most kMaxThreads: what a thread count of 0 stands for.
  static int default_threads();
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Calls task(index, thread) for every index in [0, n_tasks); returns when all have run.
  // `thread` is in [0, size()) and may index per-thread scratch. REQUIRES: n_tasks < 2^31.
  void parallel_for(int64_t n_tasks, const std::function<void(int64_t index, int thread)>& task);

  // Calls body(begin, end) for consecutive ranges that cover [0, n_items), each of at least
  // min_items (the last may be shorter) and at most four per thread; on this thread alone when
  // that makes one range. For row-wise work whose rows are independent (norms, RoPE, mixing):
  // a row's result does not depend on its range.
  void parallel_ranges(int64_t n_items, int64_t min_items,
                       const std::function<void(int64_t begin, int64_t end)>& body);

  // Ends the workers' spinning: they sleep until the next parallel_for. For a caller about to
  // block on something else (an expert read), so that no thread of ours spins on a core the
  // reads need (on a 2-vCPU VM, the virtual disk itself is slower while both vCPUs are busy).
  void rest() { resting_.store(true, std::memory_order_relaxed); }

  // A job that starts while `condition()` holds runs on size() - 1 threads (a pool of one
  // thread keeps it): the last worker
  // sits it out, leaving its core to the I/O threads (and, on a VM, to the virtual disk's
  // emulation, which shares the VM's cores). Called on the caller's thread at every job's
  // start, so it must be cheap. Results do not depend on it (tasks are thread-independent).
  void spare_a_core_while(std::function<bool()> condition) {
    spare_condition_ = std::move(condition);
  }

 private:
  ThreadPool() = default;
  void worker_loop(int thread);
  // Runs tasks of job `job` until it has none left to hand out.
  void run_tasks(uint32_t job, int thread);

  std::vector<std::thread> workers_;
  // The current job's, valid while it has tasks not yet finished.
  const std::function<void(int64_t, int)>* task_ = nullptr;
  int64_t n_tasks_ = 0;
  // (job << 32) | tasks not yet handed out; a claim of c tasks subtracts c and takes the c
  // tasks from n_tasks_ - (the count before the subtraction), so tasks start in index order.
  std::atomic<uint64_t> claims_{0};
  std::atomic<int32_t> unfinished_{0};  // tasks of the current job not yet finished
  std::atomic<uint32_t> job_{0};        // bumped to start a job (and to stop)
  std::atomic<bool> stopping_{false};
  std::atomic<bool> resting_{false};  // rest() since the last job started
  std::function<bool()> spare_condition_;
  std::atomic<int> participants_{1};  // threads 0 .. participants_ - 1 run the current job
};

}  // namespace strata
