// Mat-vec and 4-column products of the AVX2 kernels of Q4_0, Q8_0, IQ4_NL and F16 (and the
// other dense and 32-weight block formats), in GB/s of weight bytes streamed: decode is
// memory-bound, so a kernel is good when its GB/s is near `StreamRead`, a plain AVX2 read of
// the same bytes. The matrix (kMatrixBytes of weights) is several times larger than the
// last-level cache, so every pass reads from DRAM; the L2 variants (kResidentBytes) show the
// kernels' compute speed alone.
//
// MatVec: 1 column (decode), 1 and 2 threads; MatMul4: 4 columns (prefill), GFLOP/s. Each
// thread is one kernel call per row, as cpu/matmul.cpp makes them for prefill. MatVecRows:
// decode's calls, the rows kernel over 64 rows at a time, AVX2 and AVX-512 VNNI (Q4_0, Q8_0).
//
//   vec_dot_legacy_bench --benchmark_filter='MatVec/' --benchmark_repetitions=3
//   vec_dot_legacy_bench --benchmark_filter='MatVecRows|StreamRead' --benchmark_repetitions=3
//   vec_dot_legacy_bench --benchmark_filter='StreamRead'
// On a shared machine, run it under `chrt -f 10` (and `taskset -c 1` for one thread): other
// processes' time slices otherwise show up as lost bandwidth.
#include "base/cpu_features.h"
#include "cpu/kernels/simd_kernels.h"
#include "quant/bf16.h"
#include "quant/f16.h"
#include "quant/f32.h"
#include "quant/iq4_nl.h"
#include "quant/q4_0.h"
#include "quant/q4_1.h"
#include "quant/q5_0.h"
#include "quant/q5_1.h"
#include "quant/q8_0.h"
#include "quant/q8_1.h"
#include "quant/quant_type.h"

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace strata {
namespace {

constexpr int64_t kRowLength = 8192;                // weights per row
constexpr size_t kMatrixBytes = size_t(1) << 30;    // > 300 MiB of L3 on the reference machine
constexpr size_t kResidentBytes = size_t(1) << 20;  // fits a 2 MiB+ L2

// How a matrix of a format is filled with sane random weights: each 64-bit word is
// (random & keep) | force, then blocks get a random fp16 near 2^-7 in their first n_halves
// fp16 fields (scale, minimum), so no NaN, infinity or subnormal slows the arithmetic down.
struct Fill {
  uint64_t keep = ~0ull;
  uint64_t force = 0;
  int n_halves = 0;
};
constexpr Fill kHalves{0x83ff83ff83ff83ffull, 0x3800380038003800ull};     // +-[0.5, 1)
constexpr Fill kBfloat16s{0x807f807f807f807full, 0x3f003f003f003f00ull};  // +-[0.5, 1)
constexpr Fill kFloats{0x807fffff807fffffull, 0x3f0000003f000000ull};     // +-[0.5, 1)
constexpr Fill kScale{~0ull, 0, 1};
constexpr Fill kScaleAndMinimum{~0ull, 0, 2};

struct Kernel {
  const char* name;
  size_t block_bytes;
  int64_t block_size;
  size_t activation_block_bytes;
  QuantizeRowFn quantize_activations;
  VecDotFn vec_dot;
  Fill fill;
  size_t row_bytes() const { return size_t(kRowLength / block_size) * block_bytes; }
  size_t activation_row_bytes() const {
    return size_t(kRowLength / block_size) * activation_block_bytes;
  }
};

const Kernel kKernels[] = {
    {"q4_0", 18, 32, 34, quantize_row_q8_0, vec_dot_q4_0_avx2, kScale},
    {"q8_0", 34, 32, 34, quantize_row_q8_0, vec_dot_q8_0_avx2, kScale},
    {"iq4_nl", 18, 32, 34, quantize_row_q8_0, vec_dot_iq4_nl_avx2, kScale},
    {"f16", 2, 1, 2, quantize_row_f16, vec_dot_f16_avx2, kHalves},
    {"q4_1", 20, 32, 36, quantize_row_q8_1, vec_dot_q4_1_avx2, kScaleAndMinimum},
    {"q5_0", 22, 32, 34, quantize_row_q8_0, vec_dot_q5_0_avx2, kScale},
    {"q5_1", 24, 32, 36, quantize_row_q8_1, vec_dot_q5_1_avx2, kScaleAndMinimum},
    {"bf16", 2, 1, 2, quantize_row_bf16, vec_dot_bf16_avx2, kBfloat16s},
    {"f32", 4, 1, 4, quantize_row_f32, vec_dot_f32_avx2, kFloats},
};

// The weight matrix, shared by all benchmarks and refilled when the format changes.
class SharedMatrix {
 public:
  // REQUIRES: called by every thread of a benchmark before its timing loop.
  const uint8_t* prepare(const Kernel& kernel) {
    std::lock_guard lock(mutex_);
    if (!bytes_) bytes_.reset(static_cast<uint8_t*>(std::aligned_alloc(4096, kMatrixBytes)));
    if (format_ != kernel.name) {
      fill(kernel);
      format_ = kernel.name;
    }
    return bytes_.get();
  }

 private:
  void fill(const Kernel& kernel) {
    std::mt19937_64 rng(42);
    for (size_t i = 0; i < kMatrixBytes; i += 8) {
      const uint64_t word = (rng() & kernel.fill.keep) | kernel.fill.force;
      std::memcpy(bytes_.get() + i, &word, 8);
    }
    for (size_t b = 0; kernel.fill.n_halves > 0 && b + kernel.block_bytes <= kMatrixBytes;
         b += kernel.block_bytes) {
      for (int h = 0; h < kernel.fill.n_halves; ++h) {
        const uint16_t half = uint16_t(0x2000 | (rng() & 0x83ff));
        std::memcpy(bytes_.get() + b + 2 * h, &half, 2);
      }
    }
  }

  std::mutex mutex_;
  std::unique_ptr<uint8_t, decltype(&std::free)> bytes_{nullptr, std::free};
  std::string format_;
};

SharedMatrix& shared_matrix() {
  static SharedMatrix matrix;
  return matrix;
}

std::vector<uint8_t> activations(const Kernel& kernel, int n_cols) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> values(kRowLength);
  std::vector<uint8_t> out(n_cols * kernel.activation_row_bytes());
  for (int c = 0; c < n_cols; ++c) {
    for (auto& v : values) v = normal(rng);
    kernel.quantize_activations(values.data(), out.data() + c * kernel.activation_row_bytes(),
                                kRowLength);
  }
  return out;
}

// One iteration = every row of a `matrix_bytes` matrix against n_cols columns; with several
// threads each takes an equal share of the rows.
void run_products(benchmark::State& state, const Kernel& kernel, size_t matrix_bytes, int n_cols) {
  if (simd_level() != SimdLevel::kAvx2) {
    state.SkipWithError("CPU lacks AVX2");
    return;
  }
  const int64_t n_rows = int64_t(matrix_bytes / kernel.row_bytes());
  const int64_t rows_per_thread = n_rows / state.threads();
  const uint8_t* rows =
      shared_matrix().prepare(kernel) + state.thread_index() * rows_per_thread * kernel.row_bytes();
  const auto x = activations(kernel, n_cols);
  std::vector<float> out(n_cols);
  for (auto _ : state) {
    for (int64_t r = 0; r < rows_per_thread; ++r) {
      kernel.vec_dot(kRowLength, rows + r * kernel.row_bytes(), x.data(),
                     kernel.activation_row_bytes(), n_cols, out.data());
      benchmark::DoNotOptimize(out.data());
    }
  }
  const double bytes = double(rows_per_thread) * double(kernel.row_bytes());
  state.SetBytesProcessed(int64_t(state.iterations() * bytes));
  state.counters["GFLOP/s"] = benchmark::Counter(
      double(state.iterations()) * 2.0 * double(rows_per_thread) * kRowLength * n_cols / 1e9,
      benchmark::Counter::kIsRate);
}

// Decode's call shape: vec_dot_rows over tasks of kRowsPerTask rows `row_length` weights long
// (2048: a 30B-A3B expert's gate and up rows; 768: its down rows), near how cpu/matmul.cpp
// calls it (tasks of ~64 KiB of weights: 56 rows of 2048, 148 of 768).
void run_row_products(benchmark::State& state, const Kernel& kernel, VecDotRowsFn rows_kernel,
                      int64_t row_length) {
  if (simd_level() != SimdLevel::kAvx2) {
    state.SkipWithError("CPU lacks AVX2");
    return;
  }
  constexpr int kRowsPerTask = 64;
  const size_t row_bytes = size_t(row_length / kernel.block_size) * kernel.block_bytes;
  const int64_t n_rows = int64_t(kMatrixBytes / row_bytes) / state.threads();
  const int64_t n_tasks = n_rows / kRowsPerTask;
  const uint8_t* rows = shared_matrix().prepare(kernel) + state.thread_index() * n_rows * row_bytes;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<size_t>(row_length));
  for (auto& v : values) v = normal(rng);
  std::vector<uint8_t> x(size_t(row_length / kernel.block_size) * kernel.activation_block_bytes);
  kernel.quantize_activations(values.data(), x.data(), row_length);
  std::vector<float> out(kRowsPerTask);
  for (auto _ : state) {
    for (int64_t t = 0; t < n_tasks; ++t) {
      rows_kernel(row_length, rows + size_t(t) * kRowsPerTask * row_bytes, row_bytes, kRowsPerTask,
                  x.data(), out.data());
      benchmark::DoNotOptimize(out.data());
    }
  }
  state.SetBytesProcessed(int64_t(state.iterations() * n_tasks * kRowsPerTask * row_bytes));
}

// The hardware's streaming read speed over the same matrix: AVX2 loads, one add each, with the
// kernels' software prefetch (4 KiB ahead, into L2).
__attribute__((target("avx2"))) void StreamRead(benchmark::State& state) {
  const size_t bytes_per_thread = kMatrixBytes / state.threads();
  const auto* start =
      shared_matrix().prepare(kKernels[0]) + state.thread_index() * bytes_per_thread;
  for (auto _ : state) {
    __m256i sum0 = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
    for (size_t i = 0; i < bytes_per_thread; i += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(start) + i + 4096, _MM_HINT_T1);
      sum0 = _mm256_add_epi64(sum0, _mm256_load_si256(reinterpret_cast<const __m256i*>(start + i)));
      sum1 = _mm256_add_epi64(sum1,
                              _mm256_load_si256(reinterpret_cast<const __m256i*>(start + i + 32)));
    }
    benchmark::DoNotOptimize(sum0);
    benchmark::DoNotOptimize(sum1);
  }
  state.SetBytesProcessed(int64_t(state.iterations() * bytes_per_thread));
}

void register_benchmarks() {
  benchmark::RegisterBenchmark("StreamRead", StreamRead)
      ->Threads(1)
      ->Threads(2)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  struct RowsKernel {
    const Kernel* format;
    const char* name;
    VecDotRowsFn kernel;
    bool needs_avx512;
  };
  for (const RowsKernel& rows :
       {RowsKernel{&kKernels[0], "avx2", vec_dot_rows_q4_0_avx2, false},
        RowsKernel{&kKernels[0], "avx512", vec_dot_rows_q4_0_avx512, true},
        RowsKernel{&kKernels[1], "avx2", vec_dot_rows_q8_0_avx2, false},
        RowsKernel{&kKernels[1], "avx512", vec_dot_rows_q8_0_avx512, true}})
    for (int64_t row_length : {2048, 768})
      benchmark::RegisterBenchmark(("MatVecRows/" + std::string(rows.format->name) + "/" +
                                    rows.name + "/" + std::to_string(row_length))
                                       .c_str(),
                                   [rows, row_length](benchmark::State& s) {
                                     if (rows.needs_avx512 && !avx512_vnni()) {
                                       s.SkipWithError("CPU lacks AVX-512 VNNI");
                                       return;
                                     }
                                     run_row_products(s, *rows.format, rows.kernel, row_length);
                                   })
          ->Threads(1)
          ->Threads(2)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
  for (const Kernel& kernel : kKernels) {
    const std::string name(kernel.name);
    benchmark::RegisterBenchmark(
        ("MatVec/" + name).c_str(),
        [&kernel](benchmark::State& s) { run_products(s, kernel, kMatrixBytes, 1); })
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(
        ("MatMul4/" + name).c_str(),
        [&kernel](benchmark::State& s) { run_products(s, kernel, kMatrixBytes, 4); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(
        ("MatVecL2/" + name).c_str(),
        [&kernel](benchmark::State& s) { run_products(s, kernel, kResidentBytes, 1); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(
        ("MatMul4L2/" + name).c_str(),
        [&kernel](benchmark::State& s) { run_products(s, kernel, kResidentBytes, 4); })
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  strata::register_benchmarks();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
