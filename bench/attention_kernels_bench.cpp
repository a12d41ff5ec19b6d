// One decode step's attention for the query heads of one KV head (key scores, softmax, weighted
// values), AVX2 kernels against AVX-512, over a cache in L2/L3 as in decode of a small model.
// Shapes: strata-tiny-moe (3 query heads per KV head, head_dim 64) and Qwen3-30B-A3B (8 per KV
// head, taken 4 at a time; head_dim 128). Counters: key and value bytes read per second.
//
//   attention_kernels_bench --benchmark_filter=Attention
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "cpu/attention.h"
#include "cpu/attention_kernels.h"

namespace strata {
namespace {

void attention_step(benchmark::State& state, const AttentionKernels& kernels, int n_heads,
                    int64_t head_dim) {
  const int64_t n_pos = state.range(0), capacity = LayerKvView::capacity_for(n_pos);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> q(size_t(n_heads * head_dim)), keys(size_t(capacity * head_dim)),
      values(keys.size()), scores(size_t(n_heads * capacity)), out(q.size());
  for (auto* x : {&q, &keys, &values})
    for (float& value : *x) value = normal(rng);
  for (auto _ : state) {
    kernels.key_scores(q.data(), n_heads, keys.data(), head_dim, n_pos, 0.125f, scores.data(),
                       capacity);
    kernels.softmax_rows(scores.data(), n_heads, n_pos, capacity);
    kernels.weighted_values(scores.data(), n_heads, capacity, values.data(), capacity, head_dim,
                            n_pos, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * 2 * n_pos * head_dim *
                          int64_t(sizeof(float)));
}

void register_benchmarks() {
  struct Shape {
    const char* name;
    int n_heads;
    int64_t head_dim;
  };
  const Shape shapes[] = {{"tiny", 3, 64}, {"30b", 4, 128}};
  std::vector<std::pair<const char*, const AttentionKernels*>> sets = {
      {"avx2", &attention_kernels_avx2()}};
  if (avx512_vnni()) sets.emplace_back("avx512", &attention_kernels_avx512());
  for (const Shape& shape : shapes)
    for (const auto& [set_name, kernels] : sets)
      benchmark::RegisterBenchmark(
          (std::string("Attention/") + shape.name + "/" + set_name).c_str(),
          [kernels, shape](benchmark::State& state) {
            attention_step(state, *kernels, shape.n_heads, shape.head_dim);
          })
          ->Arg(128)
          ->Arg(512)
          ->Arg(2048);
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  strata::register_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
