// Expert-unit reads through the I/O engine, in MiB/s, against the disk's O_DIRECT bandwidth
// (`dd if=FILE of=/dev/null bs=4M iflag=direct`; BENCHMARKING.md: ~500 MiB/s on the
// development machine).
//
// A unit is shaped like one expert of a 30B-A3B model at Q4_0: gate, up and down slices of
// 864 KiB each (768 x 2048 weights), 2.53 MiB in all, at the same index of three stacked
// tensors that each fill a third of the file. Units are picked uniformly at random.
//
//   <Backend>/threads:<n>/batch:<b>: submits b units at once and waits for them all; batch 32
//   measures throughput, batch 1 the latency of one demand miss (its Time column). PreadDirect
//   runs n reader threads; UringDirect keeps 2n units (6n reads) in flight; PreadBuffered is
//   the pread backend without O_DIRECT, starting from a dropped page cache. ReaderAlone is the
//   baseline: the O_DIRECT FileReader reading units on the benchmark's thread, no engine.
//   bytes_per_second is in MiB/s (Google Benchmark's M is 2^20).
//
// The file is $STRATA_IO_BENCH_FILE, or a 4 GiB temporary file of random bytes. The page
// cache is dropped (sync; echo 3 > /proc/sys/vm/drop_caches, root only) before every run so
// that buffered runs start cold; O_DIRECT runs never use it.
//
//   io_engine_bench --benchmark_repetitions=5 --benchmark_min_time=2
//       --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
// (one command line).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <vector>

#include "experts/io_engine.h"
#include "experts/io_test_support.h"

namespace strata {
namespace {

constexpr size_t kSliceBytes = 768 * 2048 / 32 * 18;  // one Q4_0 768 x 2048 matrix
constexpr uint64_t kTempFileBytes = uint64_t(4) << 30;

class BenchFile {
 public:
  static BenchFile& get() {
    static BenchFile file;
    return file;
  }
  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

 private:
  BenchFile() {
    if (const char* given = std::getenv("STRATA_IO_BENCH_FILE")) {
      path_ = given;
    } else {
      std::cerr << "writing a 4 GiB temporary file (set STRATA_IO_BENCH_FILE to use another)\n";
      temp_ = std::make_unique<testing::TempFile>("/tmp", kTempFileBytes, 1);
      path_ = temp_->path();
    }
    std::ifstream file(path_, std::ios::binary | std::ios::ate);
    size_ = uint64_t(file.tellg());
  }

  std::unique_ptr<testing::TempFile> temp_;
  std::string path_;
  uint64_t size_ = 0;
};

void drop_page_cache() {
  ::sync();
  std::ofstream control("/proc/sys/vm/drop_caches");
  control << "3\n";
  control.flush();
  static bool warned = false;
  if (!control && !warned) {
    std::cerr << "cannot drop the page cache (not root?): buffered runs are warm\n";
    warned = true;
  }
}

enum class Mode { kPreadDirect, kUringDirect, kPreadBuffered };

void read_units(benchmark::State& state, Mode mode) {
  const int n_threads = int(state.range(0));
  const size_t batch = size_t(state.range(1));
  BenchFile& file = BenchFile::get();
  drop_page_cache();
  Result<std::unique_ptr<FileReader>> opened =
      open_file_reader(file.path(), /*direct=*/mode != Mode::kPreadBuffered);
  if (!opened.ok()) return state.SkipWithError(opened.status().message().c_str());
  std::shared_ptr<FileReader> reader = std::move(opened).value();
  Result<std::unique_ptr<IoEngine>> created = IoEngine::create(
      reader, n_threads, mode == Mode::kUringDirect ? IoBackend::kUring : IoBackend::kPread);
  if (!created.ok()) return state.SkipWithError(created.status().message().c_str());
  IoEngine& engine = *created.value();

  const uint64_t tensor_bytes = file.size() / 3 / 4096 * 4096;
  const uint64_t n_units = tensor_bytes / kSliceBytes;
  testing::AlignedBuffer buffers(batch * 3 * kSliceBytes);
  std::mt19937_64 random(7);
  std::vector<IoEngine::Ticket> tickets(batch);
  for (auto _ : state) {
    for (size_t i = 0; i < batch; ++i) {
      const uint64_t unit = random() % n_units;
      ReadRange ranges[3];
      for (size_t t = 0; t < 3; ++t) {
        ranges[t] = {buffers.data() + (3 * i + t) * kSliceBytes,
                     t * tensor_bytes + unit * kSliceBytes, kSliceBytes};
      }
      tickets[i] = engine.submit(ranges, 1);
    }
    for (IoEngine::Ticket ticket : tickets) {
      const Status status = engine.wait(ticket);
      if (!status.ok()) return state.SkipWithError(status.message().c_str());
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations() * batch * 3 * kSliceBytes));
}

// The baseline: the same units read by the O_DIRECT FileReader alone, one range after the
// other on the calling thread, no engine.
void ReaderAlone(benchmark::State& state) {
  BenchFile& file = BenchFile::get();
  Result<std::unique_ptr<FileReader>> opened = open_file_reader(file.path());
  if (!opened.ok()) return state.SkipWithError(opened.status().message().c_str());
  FileReader& reader = *opened.value();
  const uint64_t tensor_bytes = file.size() / 3 / 4096 * 4096;
  const uint64_t n_units = tensor_bytes / kSliceBytes;
  testing::AlignedBuffer buffer(3 * kSliceBytes);
  std::mt19937_64 random(7);
  for (auto _ : state) {
    const uint64_t unit = random() % n_units;
    for (size_t t = 0; t < 3; ++t) {
      const Status status = reader.read(buffer.data() + t * kSliceBytes,
                                        t * tensor_bytes + unit * kSliceBytes, kSliceBytes);
      if (!status.ok()) return state.SkipWithError(status.message().c_str());
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations() * 3 * kSliceBytes));
}

void PreadDirect(benchmark::State& state) { read_units(state, Mode::kPreadDirect); }
void UringDirect(benchmark::State& state) { read_units(state, Mode::kUringDirect); }
void PreadBuffered(benchmark::State& state) { read_units(state, Mode::kPreadBuffered); }

void ThreadsAndBatch(benchmark::internal::Benchmark* bench) {
  bench->ArgNames({"threads", "batch"});
  for (int64_t batch : {32, 1}) {
    for (int64_t threads : {1, 2, 4}) bench->Args({threads, batch});
  }
}

BENCHMARK(ReaderAlone)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(PreadDirect)->Apply(ThreadsAndBatch)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(UringDirect)->Apply(ThreadsAndBatch)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(PreadBuffered)
    ->ArgNames({"threads", "batch"})
    ->Args({2, 32})
    ->Args({2, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
