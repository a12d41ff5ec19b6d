// Decode's Q4_0 and Q2_0 rows kernels side by side with a plain read of the same bytes,
// interleaved round by round in one process, so that a shared host's drift hits all alike: the
// Q4_0 AVX2 kernel, its AVX-512 VNNI kernel and the grouped kernel on a grouped copy of the matrix
// (cpu/kernels/q4_0_groups.h; both where the CPU has VNNI), Q2_0's AVX2 and AVX-512 kernels on
// the same bytes (its blocks are 18 bytes too, of 64 weights: a row holds twice the weights), and
// a plain AVX2 read with the rows kernels' prefetch (integer adds, so the random bytes cost no
// float assists). Each round every variant streams the whole matrix once on N threads, in tasks of
// 64 rows (decode's tasks are ~64 KiB of weights: 56 rows of 2048). Prints each variant's median
// GB/s of weights and its median ratio to the AVX2 kernel over the rounds.
//
//   rows_kernel_ab_bench [ROW_LENGTH=2048] [THREADS=2] [MATRIX_MIB=1024] [ROUNDS=15]
//
// A matrix of 1 MiB (in L2) measures the kernels' compute alone; the default 1 GiB, DRAM. The
// matrix is on huge pages, as the weights are (base/huge_page_memory.h).
#include "base/cpu_features.h"
#include "base/huge_page_memory.h"
#include "cpu/kernels/q4_0_groups.h"
#include "cpu/kernels/simd_kernels.h"
#include "quant/q2_0.h"
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

// The Q4_0 matrix of random rows, split into one share of whole tasks per thread, and its
// grouped copy where the CPU has VNNI.
struct Matrix {
  int64_t row_length = 0;
  size_t row_bytes = 0;
  int64_t rows_per_thread = 0;
  size_t thread_bytes = 0;
  HugePageMemory plain;
  HugePageMemory grouped;
};

bool make_matrix(int64_t row_length, int n_threads, size_t matrix_bytes, std::mt19937_64& rng,
                 Matrix& m) {
  m.row_length = row_length;
  m.row_bytes = size_t(row_length / 32) * sizeof(BlockQ4_0);
  m.rows_per_thread = int64_t(matrix_bytes / m.row_bytes) / n_threads;
  m.thread_bytes = size_t(m.rows_per_thread) * m.row_bytes;
  const size_t total_bytes = m.thread_bytes * n_threads;
  m.plain = allocate_on_huge_pages(total_bytes + 4096);
  m.grouped = allocate_on_huge_pages(total_bytes + 8192);
  if (!m.plain || !m.grouped) return false;
  for (size_t i = 0; i < total_bytes; i += 8) {
    const uint64_t word = rng();
    std::memcpy(m.plain.get() + i, &word, 8);
  }
  for (size_t b = 0; b + sizeof(BlockQ4_0) <= total_bytes; b += sizeof(BlockQ4_0)) {
    const uint16_t scale = uint16_t(0x2000 | (rng() & 0x83ff));  // +-2^-7 .. 2^-6, no NaN
    std::memcpy(m.plain.get() + b, &scale, 2);
  }
  if (avx512_vnni()) {
    std::memcpy(m.grouped.get(), m.plain.get(), total_bytes);
    group_q4_0_rows(m.grouped.get(), row_length,
                    m.rows_per_thread / kRowsPerTask * kRowsPerTask * n_threads);
  }
  return true;
}

// A row of normal activations in Q8_0, the format the Q4_0 kernels take.
std::vector<uint8_t> quantized_activations(int64_t row_length, std::mt19937_64& rng) {
  std::vector<float> values(static_cast<size_t>(row_length));
  std::normal_distribution<float> normal;
  for (auto& v : values) v = normal(rng);
  std::vector<uint8_t> x(size_t(row_length / 32) * sizeof(BlockQ8_0));
  quantize_row_q8_0(values.data(), x.data(), row_length);
  return x;
}

struct Variant {
  std::string name;
  VecDotRowsFn kernel;  // nullptr: the grouped kernel, or else the plain read
  bool grouped = false;
  int64_t weights_per_block = 32;  // 64 for Q2_0, whose rows of the same bytes hold twice as many
};

std::vector<Variant> variants_of_this_cpu() {
  std::vector<Variant> variants = {{"avx2 rows kernel", vec_dot_rows_q4_0_avx2}};
  if (avx512_vnni()) {
    variants.push_back({"avx512 rows kernel", vec_dot_rows_q4_0_avx512});
    variants.push_back({"grouped kernel", nullptr, true});
  }
  static_assert(sizeof(BlockQ2_0) == sizeof(BlockQ4_0));
  variants.push_back({"q2_0 avx2 kernel", vec_dot_rows_q2_0_avx2, false, kQ2_0BlockSize});
  if (avx512_vnni())
    variants.push_back({"q2_0 avx512 kernel", vec_dot_rows_q2_0_avx512, false, kQ2_0BlockSize});
  variants.push_back({"prefetched read", nullptr});
  return variants;
}

// One thread's share of a pass: its rows in tasks of kRowsPerTask, or the plain read of them.
// `x` holds activations for rows of Q2_0's weights, twice a Q4_0 row's.
void stream_rows(const Variant& variant, const Matrix& m, int thread, const uint8_t* x) {
  const int64_t row_length = m.row_length / 32 * variant.weights_per_block;
  const uint8_t* rows =
      (variant.grouped ? m.grouped : m.plain).get() + size_t(thread) * m.thread_bytes;
  float out[kRowsPerTask];
  if (variant.grouped) {
    for (int64_t r = 0; r + kRowsPerTask <= m.rows_per_thread; r += kRowsPerTask)
      vec_dot_q4_0_groups_avx512(m.row_length, rows + size_t(r) * m.row_bytes,
                                 kRowsPerTask / kQ4_0GroupRows, x, 0, 1, out, kRowsPerTask);
  } else if (!variant.kernel) {
    volatile int64_t sink = prefetched_read(rows, m.thread_bytes);
    (void)sink;
  } else {
    for (int64_t r = 0; r + kRowsPerTask <= m.rows_per_thread; r += kRowsPerTask)
      variant.kernel(row_length, rows + size_t(r) * m.row_bytes, m.row_bytes, kRowsPerTask, x, out);
  }
}

// GB/s of weights of `passes` passes over the matrix on `n_threads` threads.
double measure(const Variant& variant, const Matrix& m, int n_threads, int passes,
               const uint8_t* x) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t)
    threads.emplace_back([&, t] {
      for (int pass = 0; pass < passes; ++pass) stream_rows(variant, m, t, x);
    });
  for (auto& thread : threads) thread.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return double(m.thread_bytes) * n_threads * passes / seconds / 1e9;
}

// rates[variant][round]: each variant's median and range, and its median ratio to the first.
void print_rates(const std::vector<Variant>& variants,
                 const std::vector<std::vector<double>>& rates) {
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<double> ratios;
    for (size_t round = 0; round < rates[v].size(); ++round)
      ratios.push_back(rates[v][round] / rates[0][round]);
    const auto [low, high] = std::minmax_element(rates[v].begin(), rates[v].end());
    std::printf("  %-20s %6.2f GB/s (%.2f-%.2f)  x%.3f of the avx2 kernel\n",
                variants[v].name.c_str(), median(rates[v]), *low, *high, median(ratios));
  }
}

int run(int64_t row_length, int n_threads, size_t matrix_bytes, int rounds) {
  if (simd_level() != SimdLevel::kAvx2) {
    std::fprintf(stderr, "rows_kernel_ab_bench: CPU lacks AVX2\n");
    return 1;
  }
  std::mt19937_64 rng(42);
  Matrix m;
  if (!make_matrix(row_length, n_threads, matrix_bytes, rng, m)) {
    std::fprintf(stderr, "rows_kernel_ab_bench: cannot allocate the matrix\n");
    return 1;
  }
  const std::vector<uint8_t> x = quantized_activations(row_length * 2, rng);
  const std::vector<Variant> variants = variants_of_this_cpu();
  const int passes = std::max<int>(1, int((size_t(1) << 30) / (m.thread_bytes * n_threads)));
  std::vector<std::vector<double>> rates(variants.size());
  for (int round = 0; round < rounds; ++round)
    for (size_t v = 0; v < variants.size(); ++v)
      rates[v].push_back(measure(variants[v], m, n_threads, passes, x.data()));
  std::printf("Q4_0 rows of %lld weights, %d threads, %.0f MiB, %d rounds\n",
              static_cast<long long>(row_length), n_threads,
              double(m.thread_bytes * n_threads) / (1 << 20), rounds);
  print_rates(variants, rates);
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
