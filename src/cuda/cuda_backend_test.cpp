// The CUDA backend's ops against the CPU backend's on a random one-layer model: attention over
// prompts cut into chunks and decode steps (positions beyond what the golden sequences reach),
// routing with exact ties and cache-aware routing, the experts and the shared expert, the
// logits. The CPU backend is checked against llama.cpp by tests/golden_parity_test.cpp. Skips
// without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "backend/cuda_backend.h"
#include "backend/weight_formats.h"
#include "cpu/cpu_backend.h"
#include "cuda/cuda_test_support.h"

namespace strata::cuda {
namespace {

using testing::random_floats;
using testing::random_rows;

#define SKIP_WITHOUT_GPU() \
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"

// Float sums taken in another order (positions, dimensions, chunks) than the CPU's.
constexpr double kReorderTolerance = 2e-5;

ModelShape test_shape() {
  ModelShape s;
  s.n_layer = 1;
  s.n_embd = 256;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.head_dim = 64;
  s.n_vocab = 300;
  s.n_expert = 16;
  s.n_expert_used = 4;
  s.n_ff_expert = 256;  // k-quant rows: multiples of 256
  s.n_ff_shared = 256;
  s.rope_freq_base = 1e6f;
  s.rms_eps = 1e-6f;
  return s;
}

// Random weights in host memory, each a Matrix or Vector of the layer ops.
struct RandomWeights {
  std::vector<std::vector<uint8_t>> storage;
  Matrix embedding, output, router;
  Vector output_norm, ffn_norm;
  AttentionWeights attention;
  SharedExpertWeights shared;
  std::vector<Matrix> gate, up, down;  // per expert
  WeightFormats formats;               // as the CPU backend sizes its scratch by them

  Matrix matrix(QuantType type, int64_t n_in, int64_t n_out, uint32_t seed) {
    storage.push_back(random_rows(type, n_out, n_in, seed));
    return Matrix{type, storage.back().data(), n_in, n_out};
  }
  static Vector vector(int64_t n, uint32_t seed) {
    Vector v = random_floats(size_t(n), seed, 0.2f);
    for (float& x : v) x += 1.0f;
    return v;
  }

  RandomWeights(const ModelShape& s, QuantType type) {
    const int64_t q_dim = s.n_head * s.head_dim, kv_dim = s.n_head_kv * s.head_dim;
    embedding = matrix(QuantType::kF32, s.n_embd, s.n_vocab, 1);
    output = matrix(type, s.n_embd, s.n_vocab, 2);
    router = matrix(QuantType::kF32, s.n_embd, s.n_expert, 3);
    // Experts 3 and 5 have the same router row: their logits tie exactly.
    std::memcpy(const_cast<uint8_t*>(router.row(5)), router.row(3), router.row_bytes());
    output_norm = vector(s.n_embd, 4);
    ffn_norm = vector(s.n_embd, 5);
    attention.norm = vector(s.n_embd, 6);
    attention.q = matrix(type, s.n_embd, q_dim, 7);
    attention.k = matrix(type, s.n_embd, kv_dim, 8);
    attention.v = matrix(type, s.n_embd, kv_dim, 9);
    attention.o = matrix(type, q_dim, s.n_embd, 10);
    attention.q_bias = random_floats(size_t(q_dim), 11, 0.1f);
    attention.k_bias = random_floats(size_t(kv_dim), 12, 0.1f);
    attention.v_bias = random_floats(size_t(kv_dim), 13, 0.1f);
    attention.q_norm = vector(s.head_dim, 14);
    attention.k_norm = vector(s.head_dim, 15);
    shared.gate = matrix(type, s.n_embd, s.n_ff_shared, 16);
    shared.up = matrix(type, s.n_embd, s.n_ff_shared, 17);
    shared.down = matrix(type, s.n_ff_shared, s.n_embd, 18);
    shared.gate_input = random_floats(size_t(s.n_embd), 19, 0.1f);
    for (int64_t e = 0; e < s.n_expert; ++e) {
      gate.push_back(matrix(type, s.n_embd, s.n_ff_expert, uint32_t(100 + 3 * e)));
      up.push_back(matrix(type, s.n_embd, s.n_ff_expert, uint32_t(101 + 3 * e)));
      down.push_back(matrix(type, s.n_ff_expert, s.n_embd, uint32_t(102 + 3 * e)));
    }
    formats.output = type;
    formats.layers.assign(size_t(s.n_layer), LayerFormats{.q = type,
                                                          .k = type,
                                                          .v = type,
                                                          .o = type,
                                                          .router = QuantType::kF32,
                                                          .gate = type,
                                                          .up = type,
                                                          .down = type,
                                                          .shared_expert = true,
                                                          .shared_gate = type,
                                                          .shared_up = type,
                                                          .shared_down = type});
  }

  void place_on(Backend& backend) {
    for (const auto& bytes : storage) ASSERT_TRUE(backend.place(bytes.data(), bytes.size()).ok());
    for (const Vector* v :
         {&output_norm, &ffn_norm, &attention.norm, &attention.q_bias, &attention.k_bias,
          &attention.v_bias, &attention.q_norm, &attention.k_norm, &shared.gate_input})
      ASSERT_TRUE(backend.place(v->data(), v->size() * sizeof(float)).ok());
  }
};

double relative_error(std::span<const float> ours, std::span<const float> reference) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    diff += (double(ours[i]) - reference[i]) * (double(ours[i]) - reference[i]);
    norm += double(reference[i]) * reference[i];
  }
  return std::sqrt(diff / norm);
}

struct Chunk {
  int64_t pos0, n;
};

// What one backend computes for the layer, chunk by chunk: the hidden state after attention,
// the routes, the FFN output (routed experts and the shared one) and the logits.
struct LayerOutputs {
  std::vector<std::vector<float>> attended, moe, logits;
  std::vector<std::vector<int32_t>> picks, ranked;
  std::vector<std::vector<float>> weights;
};

// The routed experts of batch.normed as the model layer computes them with the host routing
// (model/transformer.cpp): rows grouped by expert, in two claims as a store handing out experts
// as they arrive would.
void routed_experts(Backend& backend, const RandomWeights& w, const ModelShape& s,
                    BatchActivations& batch, std::span<const int32_t> picks,
                    std::span<const float> weights, int k) {
  const int64_t n = batch.normed.n_rows;
  std::vector<int64_t> rows(size_t(s.n_expert), 0), first(size_t(s.n_expert), 0);
  for (const int32_t e : picks) ++rows[size_t(e)];
  for (int64_t e = 1; e < s.n_expert; ++e)
    first[size_t(e)] = first[size_t(e - 1)] + rows[size_t(e - 1)];
  std::vector<int64_t> row_of_pick(size_t(n * k)), token_of_row(size_t(n * k));
  std::vector<int64_t> filled(size_t(s.n_expert), 0);
  for (size_t p = 0; p < row_of_pick.size(); ++p) {
    const size_t e = size_t(picks[p]);
    row_of_pick[p] = first[e] + filled[e]++;
    token_of_row[size_t(row_of_pick[p])] = int64_t(p) / k;
  }
  backend.gather_expert_inputs(batch.normed, token_of_row, w.gate[0].type, w.up[0].type,
                               w.down[0].type);
  std::vector<ExpertJob> jobs;
  for (int64_t e = 0; e < s.n_expert; ++e)
    if (rows[size_t(e)] > 0)
      jobs.push_back({w.gate[size_t(e)], w.up[size_t(e)], w.down[size_t(e)], first[size_t(e)],
                      rows[size_t(e)]});
  const size_t half = jobs.size() / 2;
  backend.compute_experts(std::span(jobs).first(half));
  backend.compute_experts(std::span(jobs).subspan(half));
  backend.mix_experts(row_of_pick, weights, k, batch.moe_out);
}

LayerOutputs run_layer(Backend& backend, RandomWeights& w, const ModelShape& s,
                       const RouteRequest& request) {
  LayerOutputs out;
  auto cache = backend.make_kv_cache(80);
  EXPECT_TRUE(cache.ok());
  const Chunk chunks[] = {{0, 40}, {40, 1}, {41, 1}, {42, 30}};
  for (const Chunk& c : chunks) {
    std::vector<int32_t> tokens(size_t(c.n));
    for (int64_t t = 0; t < c.n; ++t) tokens[size_t(t)] = int32_t((c.pos0 + t) * 37 % s.n_vocab);
    BatchActivations& batch = backend.begin_batch(c.n);
    backend.embed(w.embedding, tokens, batch.hidden);
    backend.attention(w.attention, 0, c.pos0, *cache.value(), batch.hidden);
    const auto attended = backend.host_view(batch.hidden);
    out.attended.emplace_back(attended.begin(), attended.end());
    backend.rms_norm(w.ffn_norm, batch.hidden, batch.normed);
    const RouteResult route = backend.route(w.router, batch.normed, request);
    out.picks.emplace_back(route.picks.begin(), route.picks.end());
    out.weights.emplace_back(route.weights.begin(), route.weights.end());
    const auto ranked = backend.rank_experts(w.router, batch.normed, 6);
    out.ranked.emplace_back(ranked.begin(), ranked.end());
    routed_experts(backend, w, s, batch, out.picks.back(), out.weights.back(), request.k);
    backend.shared_expert(w.shared, batch.normed, batch.moe_out);
    const auto moe = backend.host_view(batch.moe_out);
    out.moe.emplace_back(moe.begin(), moe.end());
    std::vector<float> logits;
    backend.logits(w.output_norm, w.output, batch.hidden, 0, logits);
    out.logits.push_back(logits);
    EXPECT_TRUE(backend.failure().ok()) << backend.failure().message();
  }
  return out;
}

// The probes bench bounds decode with: the device memory's copy rate, and the bus's from
// page-locked host memory, which feeds an expert arena in device memory.
TEST(GpuBackendProbes, MeasureTheDeviceMemoryAndTheBus) {
  SKIP_WITHOUT_GPU();
  auto gpu = make_cuda_backend(test_shape(), 0);
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  const std::optional<double> memory = gpu.value()->measure_memory_bandwidth();
  const std::optional<double> bus = gpu.value()->measure_host_to_device_bandwidth();
  ASSERT_TRUE(memory.has_value());
  ASSERT_TRUE(bus.has_value());
  EXPECT_GT(*memory, 0.0);
  EXPECT_GT(*bus, 0.0);
  EXPECT_TRUE(gpu.value()->failure().ok()) << gpu.value()->failure().message();
}

class GpuBackendOps : public ::testing::TestWithParam<QuantType> {};

TEST_P(GpuBackendOps, ComputeWhatTheCpuBackendComputes) {
  SKIP_WITHOUT_GPU();
  const ModelShape shape = test_shape();
  RandomWeights weights(shape, GetParam());
  std::vector<uint8_t> resident(size_t(shape.n_expert));
  for (size_t e = 0; e < resident.size(); ++e) resident[e] = e % 3 == 0;
  const RouteRequest requests[] = {
      {.k = 4, .renormalize = true},
      {.k = 4, .renormalize = false, .moce_bonus = 0.5f, .moce_protect = 1, .resident = resident}};
  for (const RouteRequest& request : requests) {
    auto cpu_backend = make_cpu_backend(shape, weights.formats, 2);
    ASSERT_TRUE(cpu_backend.ok()) << cpu_backend.status().message();
    Backend& cpu = *cpu_backend.value();
    auto gpu = make_cuda_backend(shape, 0);
    ASSERT_TRUE(gpu.ok()) << gpu.status().message();
    weights.place_on(*gpu.value());
    const LayerOutputs expected = run_layer(cpu, weights, shape, request);
    const LayerOutputs ours = run_layer(*gpu.value(), weights, shape, request);
    const LayerOutputs again = run_layer(*gpu.value(), weights, shape, request);
    for (size_t c = 0; c < expected.attended.size(); ++c) {
      SCOPED_TRACE("chunk " + std::to_string(c) + (request.moce_bonus != 0 ? ", cache-aware" : ""));
      EXPECT_LE(relative_error(ours.attended[c], expected.attended[c]), kReorderTolerance);
      EXPECT_EQ(ours.picks[c], expected.picks[c]);
      EXPECT_EQ(ours.ranked[c], expected.ranked[c]);
      EXPECT_LE(relative_error(ours.weights[c], expected.weights[c]), kReorderTolerance);
      EXPECT_LE(relative_error(ours.moe[c], expected.moe[c]), kReorderTolerance);
      EXPECT_LE(relative_error(ours.logits[c], expected.logits[c]), kReorderTolerance);
      EXPECT_EQ(ours.moe[c], again.moe[c]) << "a repeated run differs";
      EXPECT_EQ(ours.logits[c], again.logits[c]) << "a repeated run differs";
    }
  }
}

// Routing in place (the picks never leaving the device) against the host routing with the rows
// grouped by expert: the same picks, weights and routed experts' output, to the bit, for a token
// alone and for batches whose tokens share every expert.
TEST_P(GpuBackendOps, RouteInPlaceAsTheHostRoutes) {
  SKIP_WITHOUT_GPU();
  const ModelShape shape = test_shape();
  RandomWeights weights(shape, GetParam());
  auto made = make_cuda_backend(shape, 0);
  ASSERT_TRUE(made.ok()) << made.status().message();
  Backend& gpu = *made.value();
  ASSERT_TRUE(gpu.routes_in_place());
  weights.place_on(gpu);
  std::vector<ExpertMatrices> experts;
  for (int64_t e = 0; e < shape.n_expert; ++e)
    experts.push_back({weights.gate[size_t(e)], weights.up[size_t(e)], weights.down[size_t(e)]});
  const RouteRequest request{.k = 4, .renormalize = true};
  for (const int64_t n : {int64_t(1), int64_t(3), Backend::kMaxTokensRoutedInPlace}) {
    SCOPED_TRACE(std::to_string(n) + " tokens");
    // Odd tokens are one token: their rows pick the same experts.
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) tokens[size_t(t)] = int32_t(t % 2 ? 7 : t * 37 % shape.n_vocab);
    BatchActivations& batch = gpu.begin_batch(n);
    gpu.embed(weights.embedding, tokens, batch.hidden);
    gpu.rms_norm(weights.ffn_norm, batch.hidden, batch.normed);
    const RouteResult host = gpu.route(weights.router, batch.normed, request);
    const std::vector<int32_t> picks(host.picks.begin(), host.picks.end());
    const std::vector<float> mixture(host.weights.begin(), host.weights.end());
    routed_experts(gpu, weights, shape, batch, picks, mixture, request.k);
    const auto grouped_view = gpu.host_view(batch.moe_out);
    const std::vector<float> grouped(grouped_view.begin(), grouped_view.end());

    // Into another buffer than the host path's output.
    gpu.route_and_compute_experts(0, weights.router, batch.normed, request, experts,
                                  batch.lookahead);
    std::vector<float> logits;
    gpu.logits(weights.output_norm, weights.output, batch.hidden, 0, logits);
    const RouteResult in_place = gpu.routed_in_place(0);
    EXPECT_EQ(std::vector<int32_t>(in_place.picks.begin(), in_place.picks.end()), picks);
    EXPECT_EQ(std::vector<float>(in_place.weights.begin(), in_place.weights.end()), mixture);
    const auto moe = gpu.host_view(batch.lookahead);
    EXPECT_EQ(std::vector<float>(moe.begin(), moe.end()), grouped);
    EXPECT_TRUE(gpu.failure().ok()) << gpu.failure().message();
  }
}

// Decode steps as the layer loop runs them when each is repeatable: the second step for a cache
// is recorded, the later ones replay the recording with their token and position. The logits of
// every step are those of the same steps launched op by op, to the bit, also when a second cache
// (another sequence) takes turns with the first and when the scratch is released between steps.
TEST_P(GpuBackendOps, RepeatedDecodeStepsReplayBitForBit) {
  SKIP_WITHOUT_GPU();
  const ModelShape shape = test_shape();
  RandomWeights weights(shape, GetParam());
  std::vector<ExpertMatrices> experts;
  for (int64_t e = 0; e < shape.n_expert; ++e)
    experts.push_back({weights.gate[size_t(e)], weights.up[size_t(e)], weights.down[size_t(e)]});
  const RouteRequest request{.k = 4, .renormalize = true};
  auto decode = [&](bool repeatable) {
    auto made = make_cuda_backend(shape, 0);
    EXPECT_TRUE(made.ok()) << made.status().message();
    Backend& gpu = *made.value();
    weights.place_on(gpu);
    auto first = gpu.make_kv_cache(64), second = gpu.make_kv_cache(64);
    std::vector<std::vector<float>> steps;
    for (int64_t step = 0; step < 14; ++step) {
      // Six steps of the first sequence, four of the second, four of the first again.
      KvCache& cache = step >= 6 && step < 10 ? *second.value() : *first.value();
      const int64_t pos = step < 6 ? step : step < 10 ? step - 6 : step - 4;
      const int32_t token = int32_t((step * 53 + 11) % shape.n_vocab);
      // As after a prompt: the scratch, and what the recording read of it, made anew.
      if (step == 10) gpu.release_scratch();
      BatchActivations& batch = gpu.begin_batch(1);
      if (repeatable) gpu.begin_repeatable_step(cache);
      gpu.embed(weights.embedding, {&token, 1}, batch.hidden);
      gpu.attention(weights.attention, 0, pos, cache, batch.hidden);
      gpu.rms_norm(weights.ffn_norm, batch.hidden, batch.normed);
      gpu.route_and_compute_experts(0, weights.router, batch.normed, request, experts,
                                    batch.moe_out);
      gpu.shared_expert(weights.shared, batch.normed, batch.moe_out);
      gpu.add(batch.moe_out, batch.hidden);
      std::vector<float> logits;
      gpu.logits(weights.output_norm, weights.output, batch.hidden, 0, logits);
      const RouteResult routes = gpu.routed_in_place(0);
      logits.insert(logits.end(), routes.weights.begin(), routes.weights.end());
      steps.push_back(logits);
      EXPECT_TRUE(gpu.failure().ok()) << gpu.failure().message();
    }
    return steps;
  };
  const auto launched = decode(false), replayed = decode(true);
  ASSERT_EQ(replayed.size(), launched.size());
  for (size_t step = 0; step < launched.size(); ++step)
    EXPECT_EQ(replayed[step], launched[step]) << "step " << step;
}

INSTANTIATE_TEST_SUITE_P(Formats, GpuBackendOps,
                         ::testing::Values(QuantType::kF32, QuantType::kQ8_0, QuantType::kQ4_0,
                                           QuantType::kQ4_K),
                         [](const auto& info) {
                           return std::string(quant_traits(info.param).name);
                         });

}  // namespace
}  // namespace strata::cuda
