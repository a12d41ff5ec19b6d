#include "experts/io_engine.h"

#include <algorithm>

#include "base/check.h"
#include "experts/queued_io_engine.h"

namespace strata {

Result<IoBackend> parse_io_backend(std::string_view name) {
  if (name == "auto") return IoBackend::kAuto;
  if (name == "pread") return IoBackend::kPread;
  if (name == "uring") return IoBackend::kUring;
  return Status::errorf("unknown I/O backend '{}' (auto, pread or uring)", name);
}

std::string_view io_backend_name(IoBackend backend) {
  switch (backend) {
    case IoBackend::kAuto:
      return "auto";
    case IoBackend::kPread:
      return "pread";
    case IoBackend::kUring:
      return "uring";
  }
  return "?";
}

Result<std::unique_ptr<IoEngine>> IoEngine::create(std::shared_ptr<FileReader> reader,
                                                   int n_threads, IoBackend backend,
                                                   int uring_depth) {
  STRATA_CHECK(reader != nullptr);
  if (n_threads < 1 || n_threads > kMaxThreads)
    return Status::errorf("{} I/O threads: from 1 to {}", n_threads, kMaxThreads);
  if (uring_depth < 0 || uring_depth > kMaxDepth)
    return Status::errorf("{} reads in flight: from 0 to {}", uring_depth, kMaxDepth);
  if (uring_depth == 0) uring_depth = 2 * n_threads;
  switch (backend) {
    case IoBackend::kAuto: {
      auto uring = create_uring_io_engine(reader, uring_depth);
      if (uring.ok()) return uring;
      return create_pread_io_engine(std::move(reader), n_threads);
    }
    case IoBackend::kPread:
      return create_pread_io_engine(std::move(reader), n_threads);
    case IoBackend::kUring:
      return create_uring_io_engine(std::move(reader), uring_depth);
  }
  STRATA_CHECK(false);
  return Status::error("unreachable");
}

IoEngine::Ticket QueuedIoEngine::submit(std::span<const ReadRange> ranges, int priority) {
  STRATA_CHECK(!ranges.empty());
  STRATA_CHECK_LE(ranges.size(), kMaxRanges);
  Ticket ticket;
  {
    std::lock_guard lock(mutex_);
    ticket = next_ticket_++;
    Request& request = requests_[ticket];
    request.priority = priority;
    request.n_ranges = ranges.size();
    std::copy(ranges.begin(), ranges.end(), request.ranges.begin());
    queue_.emplace(priority, ticket);
  }
  on_submitted();
  return ticket;
}

void QueuedIoEngine::expedite(Ticket ticket, int priority) {
  std::lock_guard lock(mutex_);
  const auto it = requests_.find(ticket);
  if (it == requests_.end()) return;
  Request& request = it->second;
  if (request.state != Request::State::kQueued || priority >= request.priority) return;
  queue_.erase({request.priority, ticket});
  request.priority = priority;
  queue_.emplace(priority, ticket);
}

bool QueuedIoEngine::cancel(Ticket ticket) {
  std::lock_guard lock(mutex_);
  const auto it = requests_.find(ticket);
  if (it == requests_.end() || it->second.state != Request::State::kQueued) return false;
  queue_.erase({it->second.priority, ticket});
  drop_queued(it);
  return true;
}

Status QueuedIoEngine::wait(Ticket ticket) {
  std::unique_lock lock(mutex_);
  STRATA_CHECK(ticket >= 1 && ticket < next_ticket_);
  const auto it = requests_.find(ticket);
  if (it == requests_.end()) return Status();
  Request& request = it->second;
  STRATA_CHECK(request.waiter == nullptr);
  std::condition_variable woken;
  request.waiter = &woken;
  woken.wait(lock, [&] {
    return request.state == Request::State::kDone || request.state == Request::State::kCancelled;
  });
  Status status = std::move(request.status);
  requests_.erase(it);
  return status;
}

bool QueuedIoEngine::finished(Ticket ticket) const {
  std::lock_guard lock(mutex_);
  const auto it = requests_.find(ticket);
  return it == requests_.end() || it->second.state == Request::State::kDone ||
         it->second.state == Request::State::kCancelled;
}

IoEngineStats QueuedIoEngine::stats() const {
  std::lock_guard lock(mutex_);
  IoEngineStats stats = stats_;
  if (running_ > 0)
    stats.active_seconds += std::chrono::duration<double>(Clock::now() - active_since_).count();
  return stats;
}

QueuedIoEngine::Request* QueuedIoEngine::start_next() {
  if (queue_.empty()) return nullptr;
  const Ticket ticket = queue_.begin()->second;
  queue_.erase(queue_.begin());
  Request& request = requests_.at(ticket);
  request.state = Request::State::kRunning;
  request.started = Clock::now();
  if (running_.fetch_add(1, std::memory_order_relaxed) == 0) active_since_ = request.started;
  return &request;
}

void QueuedIoEngine::finish(Request* request, Status status, uint64_t bytes_read) {
  const Clock::time_point now = Clock::now();
  STRATA_CHECK(request->state == Request::State::kRunning);
  request->state = Request::State::kDone;
  request->status = std::move(status);
  ++stats_.requests_completed;
  stats_.bytes_read += bytes_read;
  stats_.busy_seconds += std::chrono::duration<double>(now - request->started).count();
  if (running_.fetch_sub(1, std::memory_order_relaxed) == 1)
    stats_.active_seconds += std::chrono::duration<double>(now - active_since_).count();
  // Notified under the lock: the condition variable lives on the waiter's stack and is gone
  // as soon as the waiter can take the lock and return.
  if (request->waiter != nullptr) request->waiter->notify_one();
}

void QueuedIoEngine::cancel_all_queued() {
  for (const auto& [priority, ticket] : queue_) drop_queued(requests_.find(ticket));
  queue_.clear();
}

void QueuedIoEngine::drop_queued(RequestTable::iterator it) {
  ++stats_.requests_cancelled;
  Request& request = it->second;
  if (request.waiter != nullptr) {
    // The waiter holds a reference to the record: it forgets the ticket when it wakes.
    request.state = Request::State::kCancelled;
    request.waiter->notify_one();
  } else {
    requests_.erase(it);
  }
}

}  // namespace strata
