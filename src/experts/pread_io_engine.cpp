// IoBackend::kPread: n threads, each taking the front of the queue and reading its ranges
// with blocking FileReader::read() calls. Works over any FileReader, test doubles included.
#include <system_error>
#include <thread>
#include <vector>

#include "experts/queued_io_engine.h"

namespace strata {
namespace {

class PreadIoEngine final : public QueuedIoEngine {
 public:
  explicit PreadIoEngine(std::shared_ptr<FileReader> reader) : QueuedIoEngine(std::move(reader)) {}

  // An error names the thread that could not start; the destructor stops the ones that did.
  Status start(int n_threads) {
    threads_.reserve(size_t(n_threads));
    for (int i = 0; i < n_threads; ++i) {
      try {
        threads_.emplace_back([this] { run(); });
      } catch (const std::system_error& error) {
        return Status::errorf("{}: cannot start I/O thread {} of {}: {}", reader_->path(), i + 1,
                              n_threads, error.code().message());
      }
    }
    return Status();
  }

  ~PreadIoEngine() override {
    {
      std::lock_guard lock(mutex_);
      cancel_all_queued();
      stopping_ = true;
    }
    work_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }

  IoBackend backend() const override { return IoBackend::kPread; }

 private:
  void on_submitted() override { work_.notify_one(); }

  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      work_.wait(lock, [this] { return stopping_ || !queue_empty(); });
      Request* request = start_next();
      if (request == nullptr) return;  // stopping, and the queue was cancelled
      lock.unlock();
      Status status;
      uint64_t bytes_read = 0;
      for (const ReadRange& range : request->range_span()) {
        status = reader_->read(range.destination, range.offset, range.length);
        if (!status.ok()) break;  // the ranges after it would not change the request's status
        bytes_read += range.length;
      }
      lock.lock();
      finish(request, std::move(status), bytes_read);
    }
  }

  std::condition_variable work_;
  bool stopping_ = false;  // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace

Result<std::unique_ptr<IoEngine>> create_pread_io_engine(std::shared_ptr<FileReader> reader,
                                                         int n_threads) {
  auto engine = std::make_unique<PreadIoEngine>(std::move(reader));
  STRATA_RETURN_IF_ERROR(engine->start(n_threads));
  return std::unique_ptr<IoEngine>(std::move(engine));
}

}  // namespace strata
