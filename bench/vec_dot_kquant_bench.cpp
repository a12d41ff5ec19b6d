// Mat-vec (1 column) and 4-column products of the AVX2 kernels of the super-block formats (Q4_K,
// Q5_K, Q6_K, Q2_K, Q3_K, IQ4_XS) and of the AVX-512 kernels of Q2_K,
// Q4_K, Q5_K and Q6_K, in GB/s of weight
// bytes streamed. Decode is memory-bound, so a kernel is good when its GB/s is near `StreamRead`, a
// plain AVX2 read of the same bytes. The DRAM variants stream a 1 GiB matrix of rows of 8192
// weights, several times the last-level cache, so every pass reads from memory; the L2 variants (1
// MiB) show the kernels' compute speed alone, which is what 4 columns (prefill) lean on.
//
//   vec_dot_kquant_bench --benchmark_filter='MatVec|MatMul4|StreamRead'
#include "base/cpu_features.h"
#include "cpu/kernels/simd_kernels.h"
#include "quant/iq4_xs.h"
#include "quant/q2_k.h"
#include "quant/q3_k.h"
#include "quant/q4_k.h"
#include "quant/q5_k.h"
#include "quant/q6_k.h"
#include "quant/q8_k.h"
#include "quant/quant_type.h"

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstddef>
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

struct Kernel {
  const char* name;
  size_t block_bytes;
  std::vector<size_t> half_fields;  // byte offsets of the fp16 scales in a block
  VecDotFn vec_dot;
  bool needs_avx512 = false;
  size_t row_bytes() const { return size_t(kRowLength / 256) * block_bytes; }
};

const Kernel kKernels[] = {
    {"q4_k",
     sizeof(BlockQ4_K),
     {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)},
     vec_dot_q4_k_avx2},
    {"q5_k",
     sizeof(BlockQ5_K),
     {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)},
     vec_dot_q5_k_avx2},
    {"q6_k", sizeof(BlockQ6_K), {offsetof(BlockQ6_K, d)}, vec_dot_q6_k_avx2},
    {"q2_k",
     sizeof(BlockQ2_K),
     {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)},
     vec_dot_q2_k_avx2},
    {"q3_k", sizeof(BlockQ3_K), {offsetof(BlockQ3_K, d)}, vec_dot_q3_k_avx2},
    {"iq4_xs", sizeof(BlockIQ4_XS), {offsetof(BlockIQ4_XS, d)}, vec_dot_iq4_xs_avx2},
    {"q4_k_avx512",
     sizeof(BlockQ4_K),
     {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)},
     vec_dot_q4_k_avx512,
     true},
    {"q5_k_avx512",
     sizeof(BlockQ5_K),
     {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)},
     vec_dot_q5_k_avx512,
     true},
    {"q6_k_avx512", sizeof(BlockQ6_K), {offsetof(BlockQ6_K, d)}, vec_dot_q6_k_avx512, true},
    {"q2_k_avx512",
     sizeof(BlockQ2_K),
     {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)},
     vec_dot_q2_k_avx512,
     true},
};

// The weight matrix, shared by all benchmarks and refilled when the format changes: random
// quants and codes with fp16 scales near 2^-7, so no subnormal or infinity slows anything down.
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
      const uint64_t word = rng();
      std::memcpy(bytes_.get() + i, &word, 8);
    }
    for (size_t b = 0; b + kernel.block_bytes <= kMatrixBytes; b += kernel.block_bytes) {
      for (size_t field : kernel.half_fields) {
        const uint16_t scale = uint16_t(0x2000 | (rng() & 0x83ff));
        std::memcpy(bytes_.get() + b + field, &scale, 2);
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

std::vector<uint8_t> activations(int n_cols) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> values(kRowLength);
  const size_t row_bytes = size_t(kRowLength / 256) * sizeof(BlockQ8_K);
  std::vector<uint8_t> out(size_t(n_cols) * row_bytes);
  for (int c = 0; c < n_cols; ++c) {
    for (auto& v : values) v = normal(rng);
    quantize_row_q8_k(values.data(), out.data() + size_t(c) * row_bytes, kRowLength);
  }
  return out;
}

// One iteration = every row of a `matrix_bytes` matrix against n_cols columns; with several
// threads each takes an equal share of the rows.
void run_products(benchmark::State& state, const Kernel& kernel, size_t matrix_bytes, int n_cols) {
  if (simd_level() != SimdLevel::kAvx2 || (kernel.needs_avx512 && !avx512_vnni())) {
    state.SkipWithError(kernel.needs_avx512 ? "CPU lacks AVX-512 VNNI" : "CPU lacks AVX2");
    return;
  }
  const int64_t n_rows = int64_t(matrix_bytes / kernel.row_bytes());
  const int64_t rows_per_thread = n_rows / state.threads();
  const uint8_t* rows =
      shared_matrix().prepare(kernel) + state.thread_index() * rows_per_thread * kernel.row_bytes();
  const auto x = activations(n_cols);
  const size_t x_stride = x.size() / size_t(n_cols);
  std::vector<float> out(static_cast<size_t>(n_cols));
  for (auto _ : state) {
    for (int64_t r = 0; r < rows_per_thread; ++r) {
      kernel.vec_dot(kRowLength, rows + r * kernel.row_bytes(), x.data(), x_stride, n_cols,
                     out.data());
      benchmark::DoNotOptimize(out.data());
    }
  }
  const double bytes = double(rows_per_thread) * double(kernel.row_bytes());
  state.SetBytesProcessed(int64_t(double(state.iterations()) * bytes));
  state.counters["GMAC/s"] = benchmark::Counter(
      double(state.iterations()) * double(rows_per_thread) * kRowLength * n_cols / 1e9,
      benchmark::Counter::kIsRate);
}

// The hardware's streaming read speed over the same matrix: AVX2 loads, one add each.
__attribute__((target("avx2"))) void StreamRead(benchmark::State& state) {
  const size_t bytes_per_thread = kMatrixBytes / size_t(state.threads());
  const auto* start =
      shared_matrix().prepare(kKernels[0]) + size_t(state.thread_index()) * bytes_per_thread;
  for (auto _ : state) {
    __m256i sum0 = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
    for (size_t i = 0; i < bytes_per_thread; i += 64) {
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
  for (const Kernel& kernel : kKernels) {
    const std::string name(kernel.name);
    auto products = [&kernel](size_t matrix_bytes, int n_cols) {
      return [&kernel, matrix_bytes, n_cols](benchmark::State& state) {
        run_products(state, kernel, matrix_bytes, n_cols);
      };
    };
    benchmark::RegisterBenchmark(("MatVec/" + name).c_str(), products(kMatrixBytes, 1))
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("MatMul4/" + name).c_str(), products(kMatrixBytes, 4))
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("MatVecL2/" + name).c_str(), products(kResidentBytes, 1))
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("MatMul4L2/" + name).c_str(), products(kResidentBytes, 4))
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
