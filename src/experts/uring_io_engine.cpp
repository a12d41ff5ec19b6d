// IoBackend::kUring: one thread keeps up to max_running requests in flight through io_uring.
// A request starts by submitting one read per range, all at once, so the device sees
// max_running * kMaxRanges reads where the pread backend sees one per thread.
//
// The thread sleeps in io_uring_submit_and_wait(). So that a submit() wakes it while reads are
// in flight (an urgent read must not wait for the current ones to complete), a read of an
// eventfd is always queued in the ring: on_submitted() writes the eventfd, which completes it.
//
// Each range is read as FileReader::read() would (file_reader.h): checked with bytes_in_file(),
// short completions and -EINTR/-EAGAIN resubmitted for the rest, zeros past the end of the file.
// A split model's range goes to the descriptor of the part that holds it (FileReader::part_at).
#include <liburing.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "base/check.h"
#include "experts/queued_io_engine.h"

namespace strata {
namespace {

// io_uring_prep_read takes a 32-bit length; longer ranges are read in pieces of this size.
constexpr size_t kMaxReadBytes = size_t(1) << 30;

class UringIoEngine final : public QueuedIoEngine {
 public:
  UringIoEngine(std::shared_ptr<FileReader> reader, int max_running)
      : QueuedIoEngine(std::move(reader)), slots_(size_t(max_running)) {
    for (Running& slot : slots_) free_slots_.push_back(&slot);
  }

  ~UringIoEngine() override {
    if (thread_.joinable()) {
      {
        std::lock_guard lock(mutex_);
        cancel_all_queued();
        stopping_ = true;
      }
      on_submitted();
      thread_.join();
    }
    if (ring_ready_) io_uring_queue_exit(&ring_);
    if (event_fd_ >= 0) ::close(event_fd_);
  }

  // Sets up the eventfd and the ring, then starts the thread.
  Status start() {
    event_fd_ = ::eventfd(0, EFD_CLOEXEC);
    if (event_fd_ < 0) {
      return Status::errorf("{}: io_uring backend: cannot create an eventfd: {}", reader_->path(),
                            std::strerror(errno));
    }
    // One submission entry per range of every running request, and one for the wakeup read.
    const unsigned entries = unsigned(slots_.size() * kMaxRanges + 1);
    const int result = io_uring_queue_init(entries, &ring_, 0);
    if (result < 0) {
      return Status::errorf("{}: io_uring unavailable (cannot set up a ring of {} entries: {})",
                            reader_->path(), entries, std::strerror(-result));
    }
    ring_ready_ = true;
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error& error) {
      return Status::errorf("{}: cannot start the io_uring thread: {}", reader_->path(),
                            error.code().message());
    }
    return Status();
  }

  IoBackend backend() const override { return IoBackend::kUring; }

 private:
  struct Running;
  // One range of a running request; its address is the user_data of the range's reads.
  struct RangeRead {
    Running* owner = nullptr;
    size_t index = 0;
    const FileReader* file = nullptr;  // the part holding the range
    uint64_t offset_in_file = 0;
    size_t expected = 0;  // bytes inside the file (bytes_in_file)
    size_t done = 0;
  };
  struct Running {
    Request* request = nullptr;
    std::array<RangeRead, kMaxRanges> reads;
    size_t ranges_left = 0;
    size_t failed_index = kMaxRanges;  // the lowest-numbered range that failed so far
    Status status;
    uint64_t bytes_read = 0;
  };

  void on_submitted() override {
    const uint64_t one = 1;
    // Cannot fail short of a counter overflow (2^64 - 1 pending wakeups).
    [[maybe_unused]] const ssize_t written = ::write(event_fd_, &one, sizeof(one));
  }

  void run() {
    arm_wakeup();
    while (start_requests()) {
      int result;
      do {
        result = io_uring_submit_and_wait(&ring_, 1);
      } while (result == -EINTR || result == -EAGAIN || result == -EBUSY);
      STRATA_CHECK_OP(result, >=, 0);
      reap();
    }
  }

  // Starts queued requests while slots are free. False once the engine is stopping and
  // nothing is running.
  bool start_requests() {
    std::lock_guard lock(mutex_);
    while (!free_slots_.empty()) {
      Request* request = start_next();
      if (request == nullptr) break;
      Running* slot = free_slots_.back();
      free_slots_.pop_back();
      begin(*slot, request);
    }
    return !(stopping_ && free_slots_.size() == slots_.size());
  }

  // REQUIRES: mutex_ held (for a request that fails before any read).
  void begin(Running& slot, Request* request) {
    slot = Running{.request = request, .ranges_left = request->n_ranges};
    for (size_t i = 0; i < request->n_ranges; ++i) {
      const ReadRange& range = request->ranges[i];
      RangeRead& read = slot.reads[i];
      const FileReader::Part part = reader_->part_at(range.offset);
      read = {.owner = &slot,
              .index = i,
              .file = part.reader,
              .offset_in_file = range.offset - part.start};
      Result<size_t> expected =
          bytes_in_file(*read.file, range.destination, read.offset_in_file, range.length);
      if (!expected.ok()) {
        end_range(read, expected.status());
      } else if (expected.value() == 0) {
        std::memset(range.destination, 0, range.length);  // all of it in the zero-filled tail
        end_range(read, Status());
      } else {
        read.expected = expected.value();
        submit_read(read);
      }
    }
    if (slot.ranges_left == 0) end_request(slot);  // no range needed a read
  }

  void submit_read(RangeRead& read) {
    const ReadRange& range = read.owner->request->ranges[read.index];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    STRATA_CHECK(sqe != nullptr);  // the ring has an entry for every range that can be running
    const size_t length = std::min(range.length - read.done, kMaxReadBytes);
    io_uring_prep_read(sqe, read.file->descriptor(),
                       static_cast<uint8_t*>(range.destination) + read.done, unsigned(length),
                       read.offset_in_file + read.done);
    io_uring_sqe_set_data(sqe, &read);
  }

  void arm_wakeup() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    STRATA_CHECK(sqe != nullptr);
    io_uring_prep_read(sqe, event_fd_, &wakeup_count_, sizeof(wakeup_count_), 0);
    io_uring_sqe_set_data(sqe, nullptr);
  }

  void reap() {
    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      auto* read = static_cast<RangeRead*>(io_uring_cqe_get_data(cqe));
      if (read == nullptr) {
        arm_wakeup();
      } else {
        on_completion(*read, cqe->res);
      }
    }
    io_uring_cq_advance(&ring_, seen);
  }

  // `result`: the completion's byte count or -errno.
  void on_completion(RangeRead& read, int result) {
    if (result == -EINTR || result == -EAGAIN) return submit_read(read);
    if (result > 0) {
      read.done += size_t(result);
      // As in read_fully(): a partial read that ends off alignment met the end of the file.
      if (read.done < read.expected && read.done % read.file->alignment() == 0) {
        return submit_read(read);
      }
    }
    if (end_range(read, range_outcome(read, result))) {
      std::lock_guard lock(mutex_);
      end_request(*read.owner);
    }
  }

  // The status of a range whose last read returned `result` and that is not resubmitted;
  // zero-fills the part of a complete range past the end of the file.
  Status range_outcome(const RangeRead& read, int result) {
    const ReadRange& range = read.owner->request->ranges[read.index];
    if (result < 0) {
      return read_error(read.file->path(), read.offset_in_file, range.length,
                        std::strerror(-result));
    }
    if (read.done < read.expected) {
      return short_read_error(read.file->path(), read.offset_in_file, range.length, read.done,
                              read.expected);
    }
    if (read.done < range.length) {
      std::memset(static_cast<uint8_t*>(range.destination) + read.done, 0,
                  range.length - read.done);
    }
    return Status();
  }

  // Records a range's outcome; true when it was the request's last range.
  bool end_range(RangeRead& read, Status status) {
    Running& slot = *read.owner;
    if (status.ok()) {
      slot.bytes_read += slot.request->ranges[read.index].length;
    } else if (read.index < slot.failed_index) {
      slot.failed_index = read.index;
      slot.status = std::move(status);
    }
    return --slot.ranges_left == 0;
  }

  // REQUIRES: mutex_ held.
  void end_request(Running& slot) {
    finish(slot.request, std::move(slot.status), slot.bytes_read);
    slot.request = nullptr;
    free_slots_.push_back(&slot);
  }

  std::vector<Running> slots_;
  std::vector<Running*> free_slots_;
  bool stopping_ = false;  // guarded by mutex_
  int event_fd_ = -1;
  uint64_t wakeup_count_ = 0;
  io_uring ring_{};
  bool ring_ready_ = false;
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<IoEngine>> create_uring_io_engine(std::shared_ptr<FileReader> reader,
                                                         int max_running) {
  STRATA_CHECK(max_running >= 1);
  if (reader->part_at(0).reader->descriptor() < 0) {
    return Status::errorf("{}: the io_uring backend needs a reader with a file descriptor",
                          reader->path());
  }
  auto engine = std::make_unique<UringIoEngine>(std::move(reader), max_running);
  STRATA_RETURN_IF_ERROR(engine->start());
  return std::unique_ptr<IoEngine>(std::move(engine));
}

}  // namespace strata
