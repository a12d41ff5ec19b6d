#include "runtime/cpu_experts.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "runtime/backend_factory.h"

namespace strata {
namespace {

// Whether the CPU's products of every routed slice are the device's bits: the formats whose
// CUDA kernels repeat the CPU's float order take 8-bit or float activations, the k-quants
// (Q8_K activations) have an order of their own on the device.
bool cpu_products_are_the_devices(const ExpertLayout& experts) {
  for (const LayerExpertLayout& l : experts.layers)
    for (const ExpertTensorLayout* t : {&l.gate, &l.up, &l.down})
      if (quant_traits(t->type).vec_dot_type == QuantType::kQ8_K) return false;
  return true;
}

struct ComputeRate {
  double bytes_per_s = 0, handoff_s = 0;
};

// Seconds the fastest of three hand-overs of `count` experts of one token took, each on units
// not computed before (the CPU reads them from memory, as the misses it takes, not from its
// caches).
double fastest_handover_s(HostExperts& host, const Model& model, int count, int& next_unit) {
  const ModelConfig& c = model.config();
  const ExpertLayout& experts = model.weights().experts;
  const int64_t n_embd = c.n_embd, n_ff = c.n_ff_expert;
  std::vector<float> x(static_cast<size_t>(n_embd));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 13) - 6) / 64.0f;
  const std::vector<int64_t> token_of_row(size_t(count), 0);
  double best = std::numeric_limits<double>::infinity();
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<ExpertJob> jobs;
    const int layer = next_unit / int(c.n_expert) % int(c.n_layer);
    const LayerExpertLayout& l = experts.layers[size_t(layer)];
    for (int i = 0; i < count; ++i, ++next_unit) {
      const size_t e = size_t(next_unit % int(c.n_expert));
      auto slice = [&](const ExpertTensorLayout& t, int64_t n_in, int64_t n_out) {
        return Matrix{t.type, t.resident[e], n_in, n_out, t.grouped_rows};
      };
      jobs.push_back({slice(l.gate, n_embd, n_ff), slice(l.up, n_embd, n_ff),
                      slice(l.down, n_ff, n_embd), int64_t(i), 1});
    }
    const auto start = std::chrono::steady_clock::now();
    host.start(x, 1, token_of_row, l.gate.type, l.up.type, l.down.type, jobs);
    host.finish();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// The CPU's rate over the bytes of a decode token's expert units, and what a hand-over costs
// beyond them, from hand-overs of one unit and of a layer's k.
ComputeRate measure_compute_rate(HostExperts& host, const Model& model) {
  const int k = int(model.config().n_expert_used);
  const double unit = double(model.weights().experts.layers[0].unit_bytes());
  int next_unit = 0;
  const double one = fastest_handover_s(host, model, 1, next_unit);
  const double all = fastest_handover_s(host, model, k, next_unit);
  ComputeRate rate;
  rate.bytes_per_s =
      all > one && k > 1 ? double(k - 1) * unit / (all - one) : double(k) * unit / all;
  rate.handoff_s = std::max(0.0, one - unit / rate.bytes_per_s);
  return rate;
}

}  // namespace

Result<CpuExperts> plan_cpu_experts(const SessionOptions& options, Backend& device,
                                    const Model& model,
                                    const std::function<void(std::string_view)>& note) {
  CpuExperts chosen;
  if (options.cpu_experts == 0) return chosen;
  const ModelConfig& config = model.config();
  const bool automatic = options.cpu_experts == SessionOptions::kCpuExpertsAuto;
  const bool same_bits = cpu_products_are_the_devices(model.weights().experts);
  if (automatic && !same_bits) {
    note(
        "note: --cpu-experts auto: off for these k-quant experts, whose products on the CPU "
        "differ from the device's in the last bits (--cpu-experts N computes up to N a layer "
        "there anyway)");
    return chosen;
  }
  // The compute thread and the copy threads keep a core each.
  const int threads = std::max(1, options.n_threads - 1 - options.io_threads);
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<Backend> cpu,
      make_backend(config, model.weight_formats(), {.device = "cpu", .n_threads = threads}));
  STRATA_ASSIGN_OR_RETURN(chosen.host, HostExperts::create(std::move(cpu)));
  chosen.rule.max_per_layer = automatic ? int(config.n_expert_used) : options.cpu_experts;
  if (!automatic) {
    note(fmt::format(
        "cpu experts: up to {} of a decode layer's misses computed by the CPU from host memory "
        "({} threads){}",
        chosen.rule.max_per_layer, chosen.host->n_threads(),
        same_bits ? ""
                  : "; for these k-quant experts the logits differ from the device's in the "
                    "last bits"));
    return chosen;
  }
  const std::optional<double> bus = device.measure_host_to_device_bandwidth();
  if (!bus) {
    note("note: --cpu-experts auto: off, the bus could not be measured");
    return CpuExperts();
  }
  const ComputeRate rate = measure_compute_rate(*chosen.host, model);
  chosen.rule.copy_bytes_per_s = *bus;
  chosen.rule.compute_bytes_per_s = rate.bytes_per_s;
  chosen.rule.handoff_s = rate.handoff_s;
  const uint64_t unit = model.weights().experts.layers[0].unit_bytes();
  const int k = int(config.n_expert_used);
  note(fmt::format(
      "cpu experts: auto: copies {:.1f} GB/s, the CPU {:.1f} GB/s of experts + {:.0f} us a layer "
      "({} threads): of {} misses in a layer the CPU computes {}, of {} {}",
      *bus / 1e9, rate.bytes_per_s / 1e9, rate.handoff_s * 1e6, chosen.host->n_threads(), k,
      chosen.rule.count(k, unit, 0), k / 2, chosen.rule.count(k / 2, unit, 0)));
  if (chosen.rule.count(k, unit, 0) == 0) return CpuExperts();
  return chosen;
}

}  // namespace strata
