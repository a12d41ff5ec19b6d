// The CPU backend: the layer ops of backend/backend.h on the host, over a pool of compute
// threads, with the kernels of cpu/ (chosen at run time for the CPU's SIMD level).
//
// Its fused decode paths (one task per KV head group for attention, one per expert for small
// experts) compute exactly what the general paths compute, in the same order per output.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/weight_formats.h"
#include "cpu/cpu_kv_cache.h"
#include "cpu/cpu_scratch.h"
#include "cpu/thread_pool.h"

namespace strata {

// A CPU backend for a model of `shape` whose weights are in `formats`, on n_threads threads
// (the caller's included); an error when the threads cannot start.
Result<std::unique_ptr<Backend>> make_cpu_backend(const ModelShape& shape,
                                                  const WeightFormats& formats, int n_threads);

class CpuBackend final : public Backend {
 public:
  CpuBackend(const ModelShape& shape, const WeightFormats& formats,
             std::unique_ptr<ThreadPool> pool);

  std::string describe() const override;
  int n_threads() const override { return pool_->size(); }
  // The ops read host memory where the weights already are.
  Status place(const void*, size_t) override { return Status(); }
  Result<std::unique_ptr<KvCache>> make_kv_cache(int64_t n_ctx) override;
  uint64_t kv_cache_bytes(int64_t n_ctx) const override;
  uint64_t kv_cache_bytes_per_position() const override;
  Result<std::unique_ptr<ExpertSlotMemory>> make_expert_slot_memory(
      std::span<const SlotClassShape> classes, size_t alignment) override;
  uint64_t scratch_bytes(const ScratchShape& shape) const override;
  void release_scratch() override;
  BatchActivations& begin_batch(int64_t n_tokens) override;

  void embed(const Matrix& table, std::span<const int32_t> tokens, Activations hidden) override;
  void attention(const AttentionWeights& weights, int layer, int64_t pos0, KvCache& cache,
                 Activations hidden) override;
  void rms_norm(const Vector& weight, Activations x, Activations out) override;
  RouteResult route(const Matrix& router, Activations x, const RouteRequest& request) override;
  std::span<const int32_t> rank_experts(const Matrix& router, Activations x, int count) override;
  std::span<const float> product_of_row(const Matrix& w, Activations x, int64_t row) override;
  std::span<const float> host_view(Activations x) override;
  void load_rows(std::span<const float> rows, Activations x) override;
  void gather_expert_inputs(Activations x, std::span<const int64_t> token_of_row,
                            QuantType gate_type, QuantType up_type, QuantType down_type) override;
  void compute_experts(std::span<const ExpertJob> jobs) override;
  std::span<const float> expert_outputs(std::span<const ExpertJob> jobs) override;
  void write_expert_outputs(std::span<const ExpertJob> jobs, std::span<const float> rows) override;
  void mix_experts(std::span<const int64_t> row_of_pick, std::span<const float> weights, int k,
                   Activations moe_out) override;
  void shared_expert(const SharedExpertWeights& weights, Activations x,
                     Activations moe_out) override;
  void add(Activations x, Activations y) override;
  void logits(const Vector& norm, const Matrix& output, Activations hidden, int64_t first_row,
              std::vector<float>& logits) override;
  void idle() override { pool_->rest(); }
  void spare_a_core_while(std::function<bool()> condition) override {
    pool_->spare_a_core_while(std::move(condition));
  }

 private:
  // x converted to `type`, cached per format until x's buffer is written again.
  const ConvertedRows& converted(Activations x, QuantType type);
  void invalidate_converted(const float* written);
  // Rows a range task of row-wise work takes at least (ThreadPool::parallel_ranges): about 16 K
  // floats, so that a prompt's norms, RoPE and mixing spread over the threads while a decode
  // step's single row stays on the caller (a launch costs about what 16 K floats of such work
  // do).
  static int64_t min_rows_per_range(int64_t width);
  // y += x over n_rows rows of `width` floats.
  void add_rows(const float* x, float* y, int64_t n_rows, int64_t width);
  // One token's attention when a task can own a KV head group (cpu_attention_block.cpp).
  void attention_whole_groups(const AttentionWeights& w, const LayerKvView& kv, int64_t pos0,
                              const ConvertedRows& xq, const ConvertedRows& xk,
                              const ConvertedRows& xv);
  void attention_batch(const AttentionWeights& w, const LayerKvView& kv, int64_t pos0, int64_t n,
                       const ConvertedRows& xq, const ConvertedRows& xk, const ConvertedRows& xv);

  ModelShape shape_;
  WeightFormats formats_;
  std::unique_ptr<ThreadPool> pool_;
  CpuScratch scratch_;
  ScratchShape allocated_{.max_tokens = 0};  // what scratch_ holds now; 0 tokens: nothing
  BatchActivations batch_;
  // expert_outputs()'s rows, sized by their first use (the experts a device leaves to the host).
  std::vector<float> expert_rows_;
  const float* converted_source_ = nullptr;  // the buffer converted_ holds conversions of
  std::array<bool, 32> converted_valid_{};
};

}  // namespace strata
