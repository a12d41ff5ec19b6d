// What the two IoEngine backends share: the priority queue, the table of tickets, waiting,
// cancellation and statistics. A backend only takes requests off the queue (start_next) and
// reports them finished (finish); io_engine.h states the contract this implements.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

#include "experts/io_engine.h"

namespace strata {

// The backends (pread_io_engine.cpp, uring_io_engine.cpp), behind IoEngine::create().
Result<std::unique_ptr<IoEngine>> create_pread_io_engine(std::shared_ptr<FileReader> reader,
                                                         int n_threads);
Result<std::unique_ptr<IoEngine>> create_uring_io_engine(std::shared_ptr<FileReader> reader,
                                                         int max_running);

class QueuedIoEngine : public IoEngine {
 public:
  Ticket submit(std::span<const ReadRange> ranges, int priority) override;
  void expedite(Ticket ticket, int priority) override;
  bool cancel(Ticket ticket) override;
  Status wait(Ticket ticket) override;
  bool finished(Ticket ticket) const override;
  IoEngineStats stats() const override;
  bool reading() const override { return running_.load(std::memory_order_relaxed) > 0; }
  const FileReader& reader() const override { return *reader_; }

 protected:
  using Clock = std::chrono::steady_clock;

  struct Request {
    enum class State { kQueued, kRunning, kDone, kCancelled };
    int priority = 0;
    std::array<ReadRange, kMaxRanges> ranges{};
    size_t n_ranges = 0;
    State state = State::kQueued;
    Status status;
    Clock::time_point started;
    std::condition_variable* waiter = nullptr;  // the wait() blocked on this request, if any
    std::span<const ReadRange> range_span() const { return {ranges.data(), n_ranges}; }
  };

  explicit QueuedIoEngine(std::shared_ptr<FileReader> reader) : reader_(std::move(reader)) {}

  // Called after submit() has queued a request, without mutex_ held: the backend makes sure a
  // thread will look at the queue.
  virtual void on_submitted() = 0;

  // REQUIRES: mutex_ held. Takes the front of the queue and marks it running; nullptr when
  // the queue is empty. The Request stays valid until finish() is called for it.
  Request* start_next();
  // REQUIRES: mutex_ held. Marks a running request finished with `status` (its first failed
  // range's) and wakes its waiter; the request may be forgotten as soon as mutex_ is released.
  // `bytes_read` counts the ranges read successfully.
  void finish(Request* request, Status status, uint64_t bytes_read);
  // REQUIRES: mutex_ held. Cancels every queued request; the destructor's first step.
  void cancel_all_queued();
  // REQUIRES: mutex_ held.
  bool queue_empty() const { return queue_.empty(); }

  const std::shared_ptr<FileReader> reader_;
  mutable std::mutex mutex_;

 private:
  // (priority, ticket): tickets grow with submission, so the set's order is the start order.
  using RequestTable = std::unordered_map<Ticket, Request>;

  // REQUIRES: mutex_ held, the request is queued and already off queue_. Counts it cancelled
  // and forgets it, or hands that to its waiter.
  void drop_queued(RequestTable::iterator it);

  std::set<std::pair<int, Ticket>> queue_;
  RequestTable requests_;
  Ticket next_ticket_ = 1;
  IoEngineStats stats_;
  // Requests between start_next() and finish(); changed under mutex_, read without it by
  // reading().
  std::atomic<int> running_{0};
  Clock::time_point active_since_;  // when running_ last rose from 0
};

}  // namespace strata
