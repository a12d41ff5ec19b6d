#include "experts/io_engine.h"

#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "experts/fault_injecting_reader.h"
#include "experts/io_test_support.h"
#include "experts/queued_io_engine.h"

namespace strata {
namespace {

using Ticket = IoEngine::Ticket;
using testing::AlignedBuffer;
using testing::TempFile;

constexpr size_t kBlock = 4096;
constexpr uint8_t kUntouched = 0xAA;

// Holds the reads that reach it until released: the engine's reader thread is then busy for
// as long as a test needs.
class Gate {
 public:
  void hold() {
    std::unique_lock lock(mutex_);
    ++entered_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
  }
  void wait_entered(int n = 1) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return entered_ >= n; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int entered_ = 0;
  bool open_ = false;
};

// A one-thread pread engine over an in-memory file whose first 4 KiB block reads through the
// gate. Request i (0-based) reads block i + 1, so the reader's log tells the order requests
// started in.
class GatedPreadEngineTest : public ::testing::Test {
 protected:
  static constexpr size_t kBlocks = 64;

  void SetUp() override {
    std::vector<uint8_t> bytes(kBlocks * kBlock);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7 + i / kBlock);
    file_ = bytes;
    reader_ = FaultInjectingReader::over_bytes("gated.gguf", std::move(bytes));
    reader_->add_rule(FaultInjectingReader::overlapping(0, kBlock),
                      ReadFault::call([this](uint64_t, size_t) { gate_.hold(); }));
    engine_ = std::move(IoEngine::create(reader_, 1, IoBackend::kPread)).value();
    buffers_.resize(kBlocks * kBlock, kUntouched);
  }
  void TearDown() override {
    gate_.release();
    engine_.reset();
  }

  // Submits the read of block 0 and returns once the reader thread is held in it.
  Ticket occupy() {
    const Ticket ticket = submit_block(0, 0);
    gate_.wait_entered();
    return ticket;
  }
  Ticket submit_block(size_t block, int priority) {
    const ReadRange range{buffers_.data() + block * kBlock, block * kBlock, kBlock};
    return engine_->submit({&range, 1}, priority);
  }
  Ticket submit_request(size_t index, int priority) { return submit_block(index + 1, priority); }
  // Request indexes in the order their reads began, the occupying read left out.
  std::vector<size_t> start_order() const {
    std::vector<size_t> order;
    for (const auto& record : reader_->read_log()) {
      if (record.offset > 0) order.push_back(record.offset / kBlock - 1);
    }
    return order;
  }
  bool block_untouched(size_t block) const {
    return std::all_of(buffers_.begin() + block * kBlock, buffers_.begin() + (block + 1) * kBlock,
                       [](uint8_t b) { return b == kUntouched; });
  }
  bool block_read(size_t block) const {
    return std::memcmp(buffers_.data() + block * kBlock, file_.data() + block * kBlock, kBlock) ==
           0;
  }
  void wait_all(std::initializer_list<Ticket> tickets) {
    for (Ticket ticket : tickets) ASSERT_TRUE(engine_->wait(ticket).ok());
  }

  Gate gate_;
  std::vector<uint8_t> file_;
  std::shared_ptr<FaultInjectingReader> reader_;
  std::unique_ptr<IoEngine> engine_;
  std::vector<uint8_t> buffers_;
};

TEST_F(GatedPreadEngineTest, LowerPriorityNumberStartsFirst) {
  const Ticket busy = occupy();
  const Ticket five = submit_request(0, 5);
  const Ticket one = submit_request(1, 1);
  const Ticket three = submit_request(2, 3);
  gate_.release();
  wait_all({busy, five, one, three});
  EXPECT_EQ(start_order(), (std::vector<size_t>{1, 2, 0}));
}

TEST_F(GatedPreadEngineTest, EqualPrioritiesStartInSubmissionOrder) {
  const Ticket busy = occupy();
  const int priorities[] = {3, 1, 3, 1, 2, 1, 3, 2};
  std::vector<Ticket> tickets;
  for (size_t i = 0; i < std::size(priorities); ++i) {
    tickets.push_back(submit_request(i, priorities[i]));
  }
  gate_.release();
  wait_all({busy});
  for (Ticket ticket : tickets) ASSERT_TRUE(engine_->wait(ticket).ok());
  EXPECT_EQ(start_order(), (std::vector<size_t>{1, 3, 5, 4, 7, 0, 2, 6}));
}

TEST_F(GatedPreadEngineTest, ExpediteMovesAQueuedRequestForward) {
  const Ticket busy = occupy();
  const Ticket a = submit_request(0, 5);
  const Ticket b = submit_request(1, 1);
  const Ticket c = submit_request(2, 4);
  const Ticket d = submit_request(3, 3);
  engine_->expedite(a, 1);      // ties with b, and a was submitted first
  engine_->expedite(d, 9);      // a higher number: no effect
  engine_->expedite(busy, 0);   // already started: no effect
  engine_->expedite(12345, 0);  // unknown: no effect
  gate_.release();
  wait_all({busy, a, b, c, d});
  EXPECT_EQ(start_order(), (std::vector<size_t>{0, 1, 3, 2}));
}

TEST_F(GatedPreadEngineTest, CancelStopsQueuedRequestsOnly) {
  const Ticket busy = occupy();
  const Ticket a = submit_request(0, 1);
  const Ticket b = submit_request(1, 2);
  const Ticket c = submit_request(2, 3);
  EXPECT_FALSE(engine_->finished(b));
  EXPECT_TRUE(engine_->cancel(b));
  EXPECT_FALSE(engine_->cancel(b)) << "forgotten once cancelled";
  EXPECT_TRUE(engine_->finished(b));
  EXPECT_TRUE(engine_->wait(b).ok()) << "returns at once";
  EXPECT_FALSE(engine_->cancel(busy)) << "already started";
  gate_.release();
  wait_all({busy, a, c});
  EXPECT_FALSE(engine_->cancel(a)) << "finished";
  EXPECT_EQ(start_order(), (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(block_untouched(2));  // request 1 reads block 2
  EXPECT_TRUE(block_read(0) && block_read(1) && block_read(3));
  const IoEngineStats stats = engine_->stats();
  EXPECT_EQ(stats.requests_completed, 3u);
  EXPECT_EQ(stats.requests_cancelled, 1u);
  EXPECT_EQ(stats.bytes_read, 3 * kBlock);
}

TEST_F(GatedPreadEngineTest, CancelWakesAThreadWaitingOnTheRequest) {
  occupy();
  const Ticket queued = submit_request(0, 1);
  std::atomic<bool> returned = false;
  std::thread waiter([&] {
    EXPECT_TRUE(engine_->wait(queued).ok());
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it block (either order works)
  EXPECT_FALSE(returned);
  EXPECT_TRUE(engine_->cancel(queued));
  waiter.join();
  EXPECT_TRUE(block_untouched(1));
}

TEST_F(GatedPreadEngineTest, FinishedDoesNotBlock) {
  const Ticket busy = occupy();
  const Ticket queued = submit_request(0, 1);
  EXPECT_FALSE(engine_->finished(busy));
  EXPECT_FALSE(engine_->finished(queued));
  gate_.release();
  while (!engine_->finished(queued)) std::this_thread::yield();
  EXPECT_TRUE(engine_->finished(busy));
  EXPECT_TRUE(engine_->wait(busy).ok());
  EXPECT_TRUE(engine_->wait(queued).ok());
}

TEST_F(GatedPreadEngineTest, WaitSleepsInsteadOfSpinning) {
  const Ticket busy = occupy();
  double waiter_cpu_ms = 0;
  std::thread waiter([&] {
    timespec start, end;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    EXPECT_TRUE(engine_->wait(busy).ok());
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
    waiter_cpu_ms = (end.tv_sec - start.tv_sec) * 1e3 + (end.tv_nsec - start.tv_nsec) * 1e-6;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  gate_.release();
  waiter.join();
  EXPECT_LT(waiter_cpu_ms, 30.0) << "a 300 ms wait should cost next to no CPU time";
}

TEST_F(GatedPreadEngineTest, ActiveTimeCountsOnlyWhileAReadRuns) {
  EXPECT_EQ(engine_->stats().active_seconds, 0.0);
  const Ticket busy = occupy();
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  const double while_running = engine_->stats().active_seconds;  // the open interval counts
  EXPECT_GE(while_running, 0.04);
  gate_.release();
  wait_all({busy});
  const double after = engine_->stats().active_seconds;
  EXPECT_GE(after, while_running);
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_EQ(engine_->stats().active_seconds, after);  // idle time does not count
}

TEST_F(GatedPreadEngineTest, ReadingOnlyWhileARequestRuns) {
  EXPECT_FALSE(engine_->reading());
  const Ticket busy = occupy();
  const Ticket queued = submit_request(0, 0);
  EXPECT_TRUE(engine_->reading());
  gate_.release();
  wait_all({busy, queued});
  EXPECT_FALSE(engine_->reading());
}

TEST_F(GatedPreadEngineTest, TicketsAreNeverReused) {
  const Ticket busy = occupy();
  std::vector<Ticket> tickets{busy};
  for (int i = 0; i < 20; ++i) {
    const Ticket ticket = submit_request(size_t(i), 1);
    if (i % 2 == 0) {
      EXPECT_TRUE(engine_->cancel(ticket));
    }
    tickets.push_back(ticket);
  }
  gate_.release();
  for (Ticket ticket : tickets) ASSERT_TRUE(engine_->wait(ticket).ok());
  tickets.push_back(submit_request(30, 0));
  ASSERT_TRUE(engine_->wait(tickets.back()).ok());
  EXPECT_EQ(tickets.front(), 1u);
  for (size_t i = 1; i < tickets.size(); ++i) EXPECT_GT(tickets[i], tickets[i - 1]);
}

TEST_F(GatedPreadEngineTest, DestructorCancelsQueuedAndFinishesRunning) {
  occupy();
  for (size_t i = 0; i < 10; ++i) submit_request(i, int(i));
  std::atomic<bool> destroyed = false;
  std::thread destroyer([&] {
    engine_.reset();
    destroyed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(destroyed) << "must wait for the running read";
  gate_.release();
  destroyer.join();
  EXPECT_TRUE(block_read(0));
  for (size_t block = 1; block <= 10; ++block) EXPECT_TRUE(block_untouched(block)) << block;
  EXPECT_EQ(reader_->reads(), 1u);
}

TEST(PreadEngineErrorsTest, RefusesCountsOutsideItsLimits) {
  const auto reader = FaultInjectingReader::over_bytes("m.gguf", std::vector<uint8_t>(kBlock));
  for (const IoBackend backend : {IoBackend::kPread, IoBackend::kUring, IoBackend::kAuto}) {
    EXPECT_EQ(IoEngine::create(reader, 65, backend).status().message(),
              "65 I/O threads: from 1 to 64");
    EXPECT_EQ(IoEngine::create(reader, 1, backend, 4097).status().message(),
              "4097 reads in flight: from 0 to 4096");
  }
}

TEST(PreadEngineErrorsTest, FirstFailingRangeIsTheRequestsStatus) {
  std::vector<uint8_t> bytes(16 * kBlock, 3);
  const auto reader = FaultInjectingReader::over_bytes("m.gguf", std::move(bytes));
  reader->add_rule(FaultInjectingReader::overlapping(5 * kBlock, 6 * kBlock),
                   ReadFault::error(EIO));
  reader->add_rule(FaultInjectingReader::overlapping(9 * kBlock, 10 * kBlock),
                   ReadFault::short_read(100));
  const auto engine = std::move(IoEngine::create(reader, 2, IoBackend::kPread)).value();
  std::vector<uint8_t> out(3 * kBlock);
  const ReadRange eio[] = {{out.data(), 0, kBlock},
                           {out.data() + kBlock, 5 * kBlock, kBlock},
                           {out.data() + 2 * kBlock, 9 * kBlock, kBlock}};
  const Status status = engine->wait(engine->submit(eio, 0));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "m.gguf: read of 4096 bytes at offset 20480: Input/output error");
  const ReadRange short_read[] = {{out.data(), 9 * kBlock, 2 * kBlock}};
  const Status second = engine->wait(engine->submit(short_read, 0));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.message(),
            "m.gguf: read of 8192 bytes at offset 36864: short read, 100 of 8192 bytes");
  const ReadRange fine[] = {{out.data(), 0, kBlock}};
  EXPECT_TRUE(engine->wait(engine->submit(fine, 0)).ok()) << "the engine goes on after errors";
  const IoEngineStats stats = engine->stats();
  EXPECT_EQ(stats.requests_completed, 3u);
  EXPECT_EQ(stats.bytes_read, 2 * kBlock) << "the first range of the first request, and the last";
}

TEST(UringEngineTest, RefusesReadersWithoutDescriptor) {
  const auto reader = std::make_shared<MemoryFileReader>("mem.gguf", std::vector<uint8_t>(100));
  Result<std::unique_ptr<IoEngine>> engine = IoEngine::create(reader, 1, IoBackend::kUring);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().message(),
            "mem.gguf: the io_uring backend needs a reader with a file descriptor");
}

TEST(IoBackendTest, AutoFallsBackToPreadWhereUringCannotRun) {
  const auto reader = std::make_shared<MemoryFileReader>("mem.gguf", std::vector<uint8_t>(100));
  Result<std::unique_ptr<IoEngine>> engine = IoEngine::create(reader, 1, IoBackend::kAuto);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ(engine.value()->backend(), IoBackend::kPread);
}

TEST(IoBackendTest, AutoPicksUringWhereItRuns) {
  const TempFile file(::testing::TempDir(), 1 << 20, 7);
  const std::shared_ptr<FileReader> reader = std::move(open_file_reader(file.path())).value();
  const bool uring_runs = IoEngine::create(reader, 1, IoBackend::kUring).ok();
  const auto engine = std::move(IoEngine::create(reader, 1, IoBackend::kAuto)).value();
  EXPECT_EQ(engine->backend(), uring_runs ? IoBackend::kUring : IoBackend::kPread);
}

TEST(IoBackendTest, NamesRoundTripAndUnknownNamesAreRefused) {
  for (IoBackend backend : {IoBackend::kAuto, IoBackend::kPread, IoBackend::kUring}) {
    Result<IoBackend> parsed = parse_io_backend(io_backend_name(backend));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed.value(), backend);
  }
  Result<IoBackend> unknown = parse_io_backend("aio");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "unknown I/O backend 'aio' (auto, pread or uring)");
}

// Both backends over a real file on disk (O_DIRECT where the file system takes it).
class IoEngineBackendTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  // 32 MiB and a bit, so that the last block is partial.
  static constexpr uint64_t kFileSize = (32u << 20) + 1234;

  static void SetUpTestSuite() {
    file_ = new TempFile(::testing::TempDir(), kFileSize, 42);
    contents_ = new std::vector<uint8_t>(testing::reference_read(file_->path(), 0, kFileSize));
  }
  static void TearDownTestSuite() {
    delete contents_;
    delete file_;
  }

  void SetUp() override {
    reader_ = std::move(open_file_reader(file_->path())).value();
    ASSERT_LE(reader_->alignment(), kBlock) << "the tests build their ranges from 4 KiB blocks";
    if (GetParam() == IoBackend::kUring) {
      Result<std::unique_ptr<IoEngine>> probe = IoEngine::create(reader_, 1, IoBackend::kUring);
      if (!probe.ok()) GTEST_SKIP() << "io_uring does not work here: " << probe.status().message();
    }
  }

  std::unique_ptr<IoEngine> make_engine(int n_threads) {
    return std::move(IoEngine::create(reader_, n_threads, GetParam())).value();
  }
  // One request in flight at a time, whatever the backend (one thread, io_uring depth 1):
  // requests then run one after the other in the order they start.
  std::unique_ptr<IoEngine> make_serial_engine() {
    return std::move(IoEngine::create(reader_, 1, GetParam(), /*uring_depth=*/1)).value();
  }

  static TempFile* file_;
  static std::vector<uint8_t>* contents_;
  std::shared_ptr<FileReader> reader_;
};

TempFile* IoEngineBackendTest::file_ = nullptr;
std::vector<uint8_t>* IoEngineBackendTest::contents_ = nullptr;

// A request of 1 to 3 random aligned ranges, each into its own part of one buffer.
struct TestRequest {
  AlignedBuffer buffer;
  std::vector<ReadRange> ranges;
  Ticket ticket = 0;

  TestRequest(std::mt19937_64& random, uint64_t file_size, size_t max_blocks)
      : buffer(3 * max_blocks * kBlock, kBlock, kUntouched) {
    const uint64_t file_blocks = (file_size + kBlock - 1) / kBlock;
    const size_t n = 1 + random() % 3;
    for (size_t i = 0; i < n; ++i) {
      const size_t blocks = 1 + random() % max_blocks;
      const uint64_t first = random() % (file_blocks - blocks + 1);
      ranges.push_back({buffer.data() + i * max_blocks * kBlock, first * kBlock, blocks * kBlock});
    }
  }

  // Every range holds the file's bytes, zeros past its end.
  bool read_correctly(const std::vector<uint8_t>& file) const {
    for (const ReadRange& range : ranges) {
      const auto* bytes = static_cast<const uint8_t*>(range.destination);
      const size_t in_file = size_t(std::min<uint64_t>(range.length, file.size() - range.offset));
      if (std::memcmp(bytes, file.data() + range.offset, in_file) != 0) return false;
      if (!std::all_of(bytes + in_file, bytes + range.length, [](uint8_t b) { return b == 0; })) {
        return false;
      }
    }
    return true;
  }
  bool untouched() const {
    for (const ReadRange& range : ranges) {
      const auto* bytes = static_cast<const uint8_t*>(range.destination);
      if (!std::all_of(bytes, bytes + range.length, [](uint8_t b) { return b == kUntouched; })) {
        return false;
      }
    }
    return true;
  }
};

TEST_P(IoEngineBackendTest, RandomRequestsReadExactBytes) {
  const auto engine = make_engine(2);
  std::mt19937_64 random(1);
  std::vector<std::unique_ptr<TestRequest>> requests;
  uint64_t bytes = 0;
  for (int i = 0; i < 300; ++i) {
    requests.push_back(std::make_unique<TestRequest>(random, kFileSize, 64));
    TestRequest& request = *requests.back();
    request.ticket = engine->submit(request.ranges, int(random() % 8));
    for (const ReadRange& range : request.ranges) bytes += range.length;
  }
  for (auto& request : requests) {
    const Status status = engine->wait(request->ticket);
    ASSERT_TRUE(status.ok()) << status.message();
    ASSERT_TRUE(request->read_correctly(*contents_)) << "request " << request->ticket;
  }
  const IoEngineStats stats = engine->stats();
  EXPECT_EQ(stats.requests_completed, 300u);
  EXPECT_EQ(stats.requests_cancelled, 0u);
  EXPECT_EQ(stats.bytes_read, bytes);
  EXPECT_GT(stats.busy_seconds, 0.0);
}

TEST_P(IoEngineBackendTest, BufferedReaderToo) {
  reader_ = std::move(open_file_reader(file_->path(), /*direct=*/false)).value();
  const auto engine = make_engine(2);
  std::mt19937_64 random(2);
  std::vector<std::unique_ptr<TestRequest>> requests;
  for (int i = 0; i < 100; ++i) {
    requests.push_back(std::make_unique<TestRequest>(random, kFileSize, 64));
    requests.back()->ticket = engine->submit(requests.back()->ranges, int(random() % 8));
  }
  for (auto& request : requests) {
    ASSERT_TRUE(engine->wait(request->ticket).ok());
    ASSERT_TRUE(request->read_correctly(*contents_)) << "request " << request->ticket;
  }
}

TEST_P(IoEngineBackendTest, TailReadsAsZerosAndFirstBadRangeFailsTheRequest) {
  const auto engine = make_engine(1);
  const size_t a = reader_->alignment();
  const uint64_t tail = (kFileSize - 1) / a * a;  // the start of the last block
  AlignedBuffer out(4 * std::max(a, kBlock), kBlock, kUntouched);
  const ReadRange tail_range{out.data(), tail, a};
  ASSERT_TRUE(engine->wait(engine->submit({&tail_range, 1}, 0)).ok());
  EXPECT_EQ(std::memcmp(out.data(), contents_->data() + tail, kFileSize - tail), 0);
  EXPECT_TRUE(std::all_of(out.data() + (kFileSize - tail), out.data() + a,
                          [](uint8_t b) { return b == 0; }));

  // Range 1 runs past the end and range 2 too: range 1's error is the request's.
  const ReadRange bad[] = {
      {out.data(), 0, a}, {out.data() + a, tail, 2 * a}, {out.data() + 3 * a, tail + a, a}};
  const Status status = engine->wait(engine->submit(bad, 0));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), fmt::format("{}: read of {} bytes at offset {}: past end of file "
                                          "({} bytes)",
                                          file_->path(), 2 * a, tail, kFileSize));
  if (a > 1) {
    const ReadRange misaligned{out.data(), 512, a};
    const Status refused = engine->wait(engine->submit({&misaligned, 1}, 0));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find("not aligned"), std::string::npos) << refused.message();
  }
}

TEST_P(IoEngineBackendTest, FileThatShrankGivesShortRead) {
  TempFile file(::testing::TempDir(), 1 << 20, 7);
  std::shared_ptr<FileReader> reader = std::move(open_file_reader(file.path())).value();
  const auto engine = std::move(IoEngine::create(reader, 1, GetParam())).value();
  const size_t block = std::max(reader->alignment(), kBlock);
  ASSERT_EQ(::truncate(file.path().c_str(), off_t(10 * block + 100)), 0);
  AlignedBuffer out(8 * block);
  const ReadRange ranges[] = {{out.data(), 0, block}, {out.data() + block, 8 * block, 4 * block}};
  const Status status = engine->wait(engine->submit(ranges, 0));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            fmt::format("{}: read of {} bytes at offset {}: short read, {} of {} bytes",
                        file.path(), 4 * block, 8 * block, 2 * block + 100, 4 * block));
}

// Three requests that show the order they ran in when they run one at a time: a and b both
// write buffer `first_`, b and c both write `second_`, each with other bytes of the file.
// Afterwards `first_` holds b's bytes only if b ran after a, `second_` c's only if c ran
// after b.
class OrderProbe {
 public:
  static constexpr size_t kBytes = 64 << 10;

  explicit OrderProbe(uint64_t base)
      : base_(base), first_(kBytes), second_(kBytes), spare_(kBytes, kBlock, kUntouched) {
    a_ = {{first_.data(), base, kBytes}};
    b_ = {{first_.data(), base + kBytes, kBytes}, {second_.data(), base + 2 * kBytes, kBytes}};
    c_ = {{second_.data(), base + 3 * kBytes, kBytes}};
    x_ = {{spare_.data(), base + 4 * kBytes, kBytes}};
  }
  std::span<const ReadRange> a() const { return a_; }
  std::span<const ReadRange> b() const { return b_; }
  std::span<const ReadRange> c() const { return c_; }
  // A fourth request, into a buffer of its own.
  std::span<const ReadRange> x() const { return x_; }
  bool ran_a_b_c(const std::vector<uint8_t>& file) const {
    return std::memcmp(first_.data(), file.data() + base_ + kBytes, kBytes) == 0 &&
           std::memcmp(second_.data(), file.data() + base_ + 3 * kBytes, kBytes) == 0;
  }
  bool x_untouched() const {
    return std::all_of(spare_.data(), spare_.data() + kBytes,
                       [](uint8_t v) { return v == kUntouched; });
  }

 private:
  uint64_t base_;
  AlignedBuffer first_, second_, spare_;
  std::vector<ReadRange> a_, b_, c_, x_;
};

// The engine is kept busy by a 16 MiB read (milliseconds, against microseconds to submit
// what follows), so the requests submitted meanwhile queue up and start by the queue's order.
class BusyEngine {
 public:
  explicit BusyEngine(IoEngine& engine) : engine_(engine), buffer_(16 << 20) {
    const ReadRange range{buffer_.data(), 8 << 20, buffer_.size()};
    ticket_ = engine.submit({&range, 1}, 0);
  }
  // Whether the long read was still running: if not, the test proved nothing.
  bool was_busy() { return !engine_.finished(ticket_); }
  ~BusyEngine() { EXPECT_TRUE(engine_.wait(ticket_).ok()); }

 private:
  IoEngine& engine_;
  AlignedBuffer buffer_;
  Ticket ticket_;
};

TEST_P(IoEngineBackendTest, BusyEngineStartsByPriorityThenSubmission) {
  const auto engine = make_serial_engine();
  OrderProbe by_priority(0), by_submission(1 << 20);
  std::vector<Ticket> tickets;
  {
    BusyEngine busy(*engine);
    tickets.push_back(engine->submit(by_priority.c(), 5));
    tickets.push_back(engine->submit(by_priority.a(), 1));
    tickets.push_back(engine->submit(by_priority.b(), 3));
    tickets.push_back(engine->submit(by_submission.a(), 7));
    tickets.push_back(engine->submit(by_submission.b(), 7));
    tickets.push_back(engine->submit(by_submission.c(), 7));
    if (!busy.was_busy()) GTEST_SKIP() << "the 16 MiB read finished before the test could queue";
  }
  for (Ticket ticket : tickets) ASSERT_TRUE(engine->wait(ticket).ok());
  EXPECT_TRUE(by_priority.ran_a_b_c(*contents_)) << "priorities 5, 1, 3 must run 1, 3, 5";
  EXPECT_TRUE(by_submission.ran_a_b_c(*contents_)) << "equal priorities run as submitted";
}

TEST_P(IoEngineBackendTest, BusyEngineHonoursExpediteAndCancel) {
  const auto engine = make_serial_engine();
  OrderProbe probe(0);
  std::vector<Ticket> tickets;
  {
    BusyEngine busy(*engine);
    const Ticket c = engine->submit(probe.c(), 4);
    const Ticket x = engine->submit(probe.x(), 1);
    const Ticket b = engine->submit(probe.b(), 3);
    const Ticket a = engine->submit(probe.a(), 6);
    engine->expedite(a, 2);
    const bool cancelled = engine->cancel(x);
    tickets = {a, b, c, x};
    if (!busy.was_busy()) GTEST_SKIP() << "the 16 MiB read finished before the test could queue";
    EXPECT_TRUE(cancelled);
  }
  for (Ticket ticket : tickets) ASSERT_TRUE(engine->wait(ticket).ok());
  EXPECT_TRUE(probe.ran_a_b_c(*contents_));
  EXPECT_TRUE(probe.x_untouched());
  EXPECT_EQ(engine->stats().requests_cancelled, 1u);
}

TEST_P(IoEngineBackendTest, ManyThreadsWaitAtOnce) {
  const auto engine = make_engine(2);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 40;
  std::atomic<int> wrong = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(100 + t);
      std::vector<std::unique_ptr<TestRequest>> mine;
      for (int i = 0; i < kPerThread; ++i) {
        mine.push_back(std::make_unique<TestRequest>(random, kFileSize, 16));
        mine.back()->ticket = engine->submit(mine.back()->ranges, int(random() % 4));
      }
      std::reverse(mine.begin(), mine.end());  // wait for the last first
      for (auto& request : mine) {
        if (!engine->wait(request->ticket).ok() || !request->read_correctly(*contents_)) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(engine->stats().requests_completed, uint64_t(kThreads * kPerThread));
}

TEST_P(IoEngineBackendTest, DestructorWithQueuedAndRunningWork) {
  std::mt19937_64 random(9);
  std::vector<std::unique_ptr<TestRequest>> requests;
  {
    const auto engine = make_engine(2);
    for (int i = 0; i < 200; ++i) {
      requests.push_back(std::make_unique<TestRequest>(random, kFileSize, 32));
      engine->submit(requests.back()->ranges, int(random() % 4));
    }
  }
  // Each request either ran in full before the destructor returned or never started.
  int ran = 0;
  for (auto& request : requests) {
    const bool read = request->read_correctly(*contents_);
    EXPECT_TRUE(read || request->untouched());
    ran += read;
  }
  std::cout << ran << " of 200 requests ran before the destructor cancelled the rest\n";
}

// Two threads submit thousands of random requests at random priorities, cancel some, expedite
// some and wait for the rest in random order.
TEST_P(IoEngineBackendTest, StressFromTwoSubmitters) {
  const auto engine = make_engine(3);
  constexpr int kPerThread = 2500;
  std::atomic<int> wrong = 0;
  std::atomic<uint64_t> cancelled = 0;
  auto submitter = [&](uint64_t seed) {
    std::mt19937_64 random(seed);
    std::vector<std::unique_ptr<TestRequest>> pending;
    auto retire = [&](size_t index) {
      std::swap(pending[index], pending.back());
      TestRequest& request = *pending.back();
      if (random() % 4 == 0 && engine->cancel(request.ticket)) {
        ++cancelled;
        if (!request.untouched()) ++wrong;
      } else if (!engine->wait(request.ticket).ok() || !request.read_correctly(*contents_)) {
        ++wrong;
      }
      pending.pop_back();
    };
    for (int i = 0; i < kPerThread; ++i) {
      pending.push_back(std::make_unique<TestRequest>(random, kFileSize, 4));
      pending.back()->ticket = engine->submit(pending.back()->ranges, int(random() % 10));
      if (random() % 8 == 0) {
        engine->expedite(pending[random() % pending.size()]->ticket, int(random() % 3));
      }
      if (pending.size() > 48) retire(random() % pending.size());
    }
    while (!pending.empty()) retire(random() % pending.size());
  };
  std::thread first(submitter, 1), second(submitter, 2);
  first.join();
  second.join();
  EXPECT_EQ(wrong, 0);
  const IoEngineStats stats = engine->stats();
  EXPECT_EQ(stats.requests_cancelled, cancelled.load());
  EXPECT_EQ(stats.requests_completed + stats.requests_cancelled, uint64_t(2 * kPerThread));
  std::cout << stats.requests_cancelled << " cancelled, " << stats.requests_completed
            << " completed, " << (stats.bytes_read >> 20) << " MiB\n";
}

INSTANTIATE_TEST_SUITE_P(Backends, IoEngineBackendTest,
                         ::testing::Values(IoBackend::kPread, IoBackend::kUring),
                         [](const auto& info) {
                           return info.param == IoBackend::kPread ? "Pread" : "Uring";
                         });

}  // namespace
}  // namespace strata
