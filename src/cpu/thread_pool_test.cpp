#include "cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

namespace strata {
namespace {

TEST(ThreadPool, RefusesCountsOutsideItsLimit) {
  EXPECT_EQ(ThreadPool::start(0).status().message(), "0 compute threads: from 1 to 512");
  EXPECT_EQ(ThreadPool::start(513).status().message(), "513 compute threads: from 1 to 512");
  EXPECT_EQ(ThreadPool::start(ThreadPool::kMaxThreads).value()->size(), ThreadPool::kMaxThreads);
  EXPECT_GE(ThreadPool::default_threads(), 1);
  EXPECT_LE(ThreadPool::default_threads(), ThreadPool::kMaxThreads);
}

TEST(ThreadPool, RunsEveryIndexOnceWithValidThreadNumbers) {
  for (int threads : {1, 2, 3, 8}) {
    const auto pool = ThreadPool::start(threads).value();
    for (int64_t n : {1, 2, 3, 7, 64, 1000}) {
      std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
      std::atomic<bool> bad_thread{false};
      pool->parallel_for(n, [&](int64_t index, int thread) {
        runs[size_t(index)].fetch_add(1);
        if (thread < 0 || thread >= pool->size()) bad_thread = true;
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(runs[size_t(i)].load(), 1) << threads << " threads, " << n << " tasks, " << i;
      EXPECT_FALSE(bad_thread.load());
    }
  }
}

TEST(ThreadPool, RangesCoverEveryItemOnceInTheirBounds) {
  for (int threads : {1, 2, 5}) {
    const auto pool = ThreadPool::start(threads).value();
    for (int64_t n : {1, 15, 16, 17, 100, 1000}) {
      for (int64_t min_items : {1, 16, 2000}) {
        std::vector<std::atomic<int>> covered(static_cast<size_t>(n));
        std::atomic<int> ranges{0}, too_short{0};
        pool->parallel_ranges(n, min_items, [&](int64_t begin, int64_t end) {
          ranges.fetch_add(1);
          if (end - begin < std::min(min_items, n) && end != n) too_short.fetch_add(1);
          for (int64_t i = begin; i < end; ++i) covered[size_t(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(covered[size_t(i)].load(), 1) << n << " " << i;
        EXPECT_EQ(too_short.load(), 0) << n << " items, at least " << min_items;
        EXPECT_LE(ranges.load(),
                  std::max<int64_t>(1, std::min<int64_t>(4 * threads, n / min_items)));
        if (n >= 2 * min_items && threads > 1) EXPECT_GT(ranges.load(), 1) << n << " " << min_items;
      }
    }
  }
}

// Many short jobs with more threads than cores, and tasks of uneven length, so that workers
// often arrive late, after the caller has finished a job alone or a new one has begun: no task
// may run twice, run after parallel_for returned, or be skipped. Every other job has up to 200
// tasks, so that claims of several tasks at once (the guided hand-out) meet late workers too.
TEST(ThreadPool, LateWorkersNeverRunATaskTwiceOrAfterItsJob) {
  const auto pool = ThreadPool::start(6).value();
  std::mt19937 rng(5);
  std::atomic<int64_t> ran_after_return{0};
  for (int job = 0; job < 20000; ++job) {
    const int64_t n = 1 + int64_t(rng() % (job % 2 == 0 ? 5 : 200));
    const int slow = int(rng() % 8);
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
    std::atomic<bool> returned{false};
    pool->parallel_for(n, [&](int64_t index, int) {
      if (returned.load()) ran_after_return.fetch_add(1);
      if (index == slow) std::this_thread::sleep_for(std::chrono::microseconds(20));
      runs[size_t(index)].fetch_add(1);
    });
    returned = true;
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(runs[size_t(i)].load(), 1) << "job " << job;
  }
  EXPECT_EQ(ran_after_return.load(), 0);
}

// rest() between jobs, at random points while workers spin, sleep or still run the last job's
// tasks: the next job still runs every task once, and a rested worker comes back to work.
TEST(ThreadPool, RestedWorkersSleepAndWakeForTheNextJob) {
  const auto pool = ThreadPool::start(3).value();
  std::mt19937 rng(7);
  std::atomic<bool> workers_ran_after_rest{false};
  bool rested = false;
  for (int job = 0; job < 5000; ++job) {
    const int64_t n = 1 + int64_t(rng() % 64);
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
    pool->parallel_for(n, [&](int64_t index, int thread) {
      if (index == 0 && n > 32) std::this_thread::sleep_for(std::chrono::microseconds(50));
      runs[size_t(index)].fetch_add(1);
      if (thread != 0 && rested) workers_ran_after_rest = true;
    });
    rested = rng() % 2;
    if (rested) pool->rest();
    if (rng() % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(runs[size_t(i)].load(), 1) << "job " << job;
  }
  EXPECT_TRUE(workers_ran_after_rest.load());
}

// Jobs started while the condition holds never run on the last thread; the others may, so the
// spared worker comes back once the condition is off. Tasks sleep now and then so that every
// worker has the time to join the jobs it is allowed into.
TEST(ThreadPool, SparedWorkerSitsOutJobsStartedWhileTheConditionHolds) {
  const auto pool = ThreadPool::start(3).value();
  bool spare = false;
  pool->spare_a_core_while([&spare] { return spare; });
  std::mt19937 rng(11);
  bool last_thread_ran_unspared = false;
  for (int job = 0; job < 2000; ++job) {
    spare = rng() % 2 == 0;
    const int64_t n = 1 + int64_t(rng() % 64);
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
    std::atomic<bool> last_thread_ran{false};
    pool->parallel_for(n, [&](int64_t index, int thread) {
      if (index % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
      runs[size_t(index)].fetch_add(1);
      if (thread == pool->size() - 1) last_thread_ran = true;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(runs[size_t(i)].load(), 1) << "job " << job;
    if (spare) {
      ASSERT_FALSE(last_thread_ran.load()) << "job " << job;
    } else if (last_thread_ran.load()) {
      last_thread_ran_unspared = true;
    }
  }
  EXPECT_TRUE(last_thread_ran_unspared);
}

TEST(ThreadPool, OneThreadKeepsItsCoreWhenAskedToSpareOne) {
  const auto pool = ThreadPool::start(1).value();
  pool->spare_a_core_while([] { return true; });
  std::vector<int> runs(100);
  pool->parallel_for(100, [&](int64_t index, int thread) { runs[size_t(index)] += 1 + thread; });
  EXPECT_EQ(std::count(runs.begin(), runs.end(), 1), 100);
}

TEST(ThreadPool, TwoThreadsSparingACoreRunOnTheCaller) {
  const auto pool = ThreadPool::start(2).value();
  pool->spare_a_core_while([] { return true; });
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  pool->parallel_for(100, [&](int64_t, int thread) {
    if (thread != 0 || std::this_thread::get_id() != caller) elsewhere.fetch_add(1);
  });
  EXPECT_EQ(elsewhere.load(), 0);
}

}  // namespace
}  // namespace strata
