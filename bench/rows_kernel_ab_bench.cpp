// Decode's Q4_0 rows kernels side by side with a plain read of the same bytes, interleaved round
// by round in one process, so that a shared host's drift hits all alike: the AVX2 kernel, the
// AVX-512 VNNI kernel and the grouped kernel on a grouped copy of the matrix
// (cpu/kernels/q4_0_groups.h; both where the CPU has VNNI), and a plain AVX2 read of the same bytes
// with the rows kernels' prefetch (integer adds, so the random bytes cost no float assists). Each
// round every variant streams the whole matrix once on N threads, in tasks of 64 rows (decode's
// tasks are ~64 KiB of weights: 56 rows of 2048). Prints each variant's median GB/s of weights
// and its median ratio to the AVX2 kernel over the rounds.
//
//   rows_kernel_ab_bench [ROW_LENGTH=2048] [THREADS=2] [MATRIX_MIB=1024] [ROUNDS=15]
//
// A matrix of 1 MiB (in L2) measures the kernels' compute alone; the default 1 GiB, DRAM. The
// matrix is on huge pages, as the weights are (base/huge_page_memory.h).
#include "base/cpu_features.h"
#include "base/huge_page_memory.h"
#include "cpu/kernels/q4_0_groups.h"
#include "cpu/kernels/simd_kernels.h"
#include "quant/q4_0.h"
#include "quant/q8_0.h"
#include "quant/quant_type.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace strata {
namespace {

constexpr int kRowsPerTask = 64;

__attribute__((target("avx2"))) int64_t prefetched_read(const uint8_t* bytes, size_t n) {
  __m256i sum = _mm256_setzero_si256();
  for (size_t i = 0; i + 64 <= n; i += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(bytes) + i + 4096, _MM_HINT_T1);
    sum = _mm256_add_epi64(sum, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes + i)));
    sum =
        _mm256_add_epi64(sum, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes + i + 32)));
  }
  return _mm256_extract_epi64(sum, 0);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int run(int64_t row_length, int n_threads, size_t matrix_bytes, int rounds) {
  if (simd_level() != SimdLevel::kAvx2) {
    std::fprintf(stderr, "rows_kernel_ab_bench: CPU lacks AVX2\n");
    return 1;
  }
  const size_t row_bytes = size_t(row_length / 32) * sizeof(BlockQ4_0);
  const int64_t rows_per_thread = int64_t(matrix_bytes / row_bytes) / n_threads;
  const size_t thread_bytes = size_t(rows_per_thread) * row_bytes;
  const HugePageMemory matrix = allocate_on_huge_pages(thread_bytes * n_threads + 4096);
  const HugePageMemory grouped = allocate_on_huge_pages(thread_bytes * n_threads + 8192);
  if (!matrix || !grouped) {
    std::fprintf(stderr, "rows_kernel_ab_bench: cannot allocate the matrix\n");
    return 1;
  }
  std::mt19937_64 rng(42);
  for (size_t i = 0; i < thread_bytes * n_threads; i += 8) {
    const uint64_t word = rng();
    std::memcpy(matrix.get() + i, &word, 8);
  }
  for (size_t b = 0; b + sizeof(BlockQ4_0) <= thread_bytes * n_threads; b += sizeof(BlockQ4_0)) {
    const uint16_t scale = uint16_t(0x2000 | (rng() & 0x83ff));  // +-2^-7 .. 2^-6, no NaN
    std::memcpy(matrix.get() + b, &scale, 2);
  }
  if (avx512_vnni()) {
    std::memcpy(grouped.get(), matrix.get(), thread_bytes * n_threads);
    group_q4_0_rows(grouped.get(), row_length,
                    rows_per_thread / kRowsPerTask * kRowsPerTask * n_threads);
  }
  std::vector<float> values(static_cast<size_t>(row_length));
  std::normal_distribution<float> normal;
  for (auto& v : values) v = normal(rng);
  std::vector<uint8_t> x(size_t(row_length / 32) * sizeof(BlockQ8_0));
  quantize_row_q8_0(values.data(), x.data(), row_length);

  struct Variant {
    std::string name;
    VecDotRowsFn kernel;  // nullptr: the grouped kernel, or else the plain read
    bool grouped = false;
  };
  std::vector<Variant> variants = {{"avx2 rows kernel", vec_dot_rows_q4_0_avx2}};
  if (avx512_vnni()) {
    variants.push_back({"avx512 rows kernel", vec_dot_rows_q4_0_avx512});
    variants.push_back({"grouped kernel", nullptr, true});
  }
  variants.push_back({"prefetched read", nullptr});

  const int passes = std::max<int>(1, int((size_t(1) << 30) / (thread_bytes * n_threads)));
  std::vector<std::vector<double>> rates(variants.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t v = 0; v < variants.size(); ++v) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> threads;
      for (int t = 0; t < n_threads; ++t) {
        threads.emplace_back([&, t] {
          const uint8_t* rows =
              (variants[v].grouped ? grouped : matrix).get() + size_t(t) * thread_bytes;
          float out[kRowsPerTask];
          for (int pass = 0; pass < passes; ++pass) {
            if (variants[v].grouped) {
              for (int64_t r = 0; r + kRowsPerTask <= rows_per_thread; r += kRowsPerTask)
                vec_dot_q4_0_groups_avx512(row_length, rows + size_t(r) * row_bytes,
                                           kRowsPerTask / kQ4_0GroupRows, x.data(), 0, 1, out,
                                           kRowsPerTask);
              continue;
            }
            if (!variants[v].kernel) {
              volatile int64_t sink = prefetched_read(rows, thread_bytes);
              (void)sink;
              continue;
            }
            for (int64_t r = 0; r + kRowsPerTask <= rows_per_thread; r += kRowsPerTask)
              variants[v].kernel(row_length, rows + size_t(r) * row_bytes, row_bytes, kRowsPerTask,
                                 x.data(), out);
          }
        });
      }
      for (auto& thread : threads) thread.join();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      rates[v].push_back(double(thread_bytes) * n_threads * passes / seconds / 1e9);
    }
  }
  std::printf("Q4_0 rows of %lld weights, %d threads, %.0f MiB, %d rounds\n",
              static_cast<long long>(row_length), n_threads,
              double(thread_bytes * n_threads) / (1 << 20), rounds);
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<double> ratios;
    for (int round = 0; round < rounds; ++round)
      ratios.push_back(rates[v][size_t(round)] / rates[0][size_t(round)]);
    const auto [low, high] = std::minmax_element(rates[v].begin(), rates[v].end());
    std::printf("  %-20s %6.2f GB/s (%.2f-%.2f)  x%.3f of the avx2 kernel\n",
                variants[v].name.c_str(), median(rates[v]), *low, *high, median(ratios));
  }
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  const int64_t row_length = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int n_threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const size_t matrix_mib = argc > 3 ? size_t(std::atoll(argv[3])) : 1024;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 15;
  if (row_length <= 0 || row_length % 32 != 0 || n_threads < 1 || matrix_mib < 1 || rounds < 1) {
    std::fprintf(stderr,
                 "usage: rows_kernel_ab_bench [ROW_LENGTH (a multiple of 32)] [THREADS] "
                 "[MATRIX_MIB] [ROUNDS]\n");
    return 1;
  }
  return strata::run(row_length, n_threads, matrix_mib << 20, rounds);
}
