// The CUDA backend: the layer ops of backend/backend.h on one GPU, with every weight in device
// memory (placed there by the model layer, weight_placement.h), the KV cache and the scratch
// there too, and the kernels of src/cuda/ on one stream.
//
// The host waits for the device where it needs a result: logits, read-ahead rankings, what
// observers read, and the router's picks (route(), once per MoE layer) except where the layer's
// experts are all in device memory and routed in place (cuda_routing_in_place.cpp). A failed
// launch, copy or allocation is kept (failure()); from then on the ops compute nothing and return
// valid but meaningless routes, so the forward pass ends and reports it instead of computing
// garbage.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/check.h"
#include "cuda/convert_rows.h"
#include "cuda/cuda_kv_cache.h"
#include "cuda/cuda_scratch.h"
#include "cuda/matmul.h"
#include "cuda/weight_placement.h"

namespace strata::cuda {

class CudaBackend final : public Backend {
 public:
  // REQUIRES: cudaSetDevice(device) succeeded; shape checked (make_cuda_backend).
  CudaBackend(const ModelShape& shape, int device, cudaDeviceProp properties, cudaStream_t stream);
  ~CudaBackend() override;

  std::string describe() const override;
  int n_threads() const override { return 1; }
  bool computes_from_own_memory() const override { return true; }
  Status place(const void* host, size_t bytes) override;
  Status failure() const override { return failure_; }
  Result<std::unique_ptr<KvCache>> make_kv_cache(int64_t n_ctx) override;
  uint64_t kv_cache_bytes(int64_t n_ctx) const override;
  uint64_t kv_cache_bytes_per_position() const override;
  Result<std::unique_ptr<ExpertSlotMemory>> make_expert_slot_memory(
      std::span<const SlotClassShape> classes, size_t alignment) override;
  std::optional<double> measure_memory_bandwidth() override;
  std::optional<double> measure_host_to_device_bandwidth() override;
  std::optional<uint64_t> peak_own_memory_bytes() const override;
  double device_wait_ms() const override { return device_wait_ms_; }
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
  bool routes_in_place() const override { return true; }
  void route_and_compute_experts(int layer, const Matrix& router, Activations x,
                                 const RouteRequest& request,
                                 std::span<const ExpertMatrices> experts,
                                 Activations moe_out) override;
  RouteResult routed_in_place(int layer) override;
  void begin_repeatable_step(const KvCache& cache) override;
  void begin_repeatable_layer(const KvCache& cache, int layer) override;
  void shared_expert(const SharedExpertWeights& weights, Activations x,
                     Activations moe_out) override;
  void add(Activations x, Activations y) override;
  void logits(const Vector& norm, const Matrix& output, Activations hidden, int64_t first_row,
              std::vector<float>& logits) override;

 private:
  // The fastest of five copies of `bytes` on the stream, after one to warm up, in ms; infinity
  // where a call fails.
  float fastest_copy_ms(void* to, const void* from, size_t bytes, cudaMemcpyKind kind);
  // One product of a weight matrix with activation rows (matmul.h), before grouping.
  struct Product {
    const Matrix* w;
    ActivationRows x;
    MatmulTask task;
  };

  // How the ops of a step run (cuda_step_graph.cpp): launched; launched into a recording of the
  // step (stream capture); or only handing over their inputs, the recording launched at logits().
  enum class StepMode { kLaunch, kRecord, kReplay };
  // A recorded decode step: for one cache and one allocation of the scratch it reads.
  struct RecordedStep {
    uint64_t cache_id = 0;
    int64_t allocated_tokens = 0;
    int64_t position_slot = -1;
    cudaGraphExec_t graph = nullptr;
  };
  // The recorded layers (begin_repeatable_layer): for one cache and one allocation of the
  // scratch, a recording of each layer's ops up to its routes' copy to the host.
  struct RecordedLayers {
    uint64_t cache_id = 0;
    int64_t allocated_tokens = 0;
    std::vector<cudaGraphExec_t> graphs;  // [layer]; null: not recorded yet
  };
  bool replaying() const { return step_mode_ == StepMode::kReplay; }
  // *result = pos0 when the stream gets there: a slot of the positions ring.
  const int64_t* device_position(int64_t pos0);
  // Ends a recording and launches it, or launches the recording replayed.
  void launch_recorded_step();
  void forget_recorded_step();
  // At route() of a repeatable layer: ends its recording and launches it, or launches the
  // recording replayed.
  void launch_recorded_layer();
  void forget_recorded_layers();
  // Every converted set as holding nothing: after a recorded layer, whose replay converts
  // without the host's knowing which sets it writes, and writes buffers whose conversions the
  // host may hold from before.
  void forget_conversions();
  // The recordings, and which step was last run unrecorded.
  void forget_steps();

  // Adds the time from its making to its end to device_wait_ms_: around a call that returns
  // once the stream's queued work has run.
  class WaitClock {
   public:
    explicit WaitClock(double& total) : total_(total) {}
    ~WaitClock() {
      total_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
                    .count();
    }

   private:
    double& total_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  };

  // Keeps the first failure; true while there is none.
  bool ok(cudaError_t error, const char* operation);
  bool ok(const Status& status);
  // x converted to the activation format of weights of `type`, cached per format until x is
  // written again (written()).
  ActivationRows converted(Activations x, QuantType type);
  // rms_norm(weight, x, out), then converted(out, type), in one launch.
  ActivationRows normed_and_converted(const Vector& weight, Activations x, Activations out,
                                      QuantType type);
  void convert_into(const float* x, int64_t x_stride, ConvertedRows& set, Format format,
                    int64_t n_rows, int64_t n_in, std::span<const RowRange> ranges);
  void written(const float* buffer);
  // Launches the products, those that share a format, row length and input in one launch each.
  void run(std::span<const Product> products);
  // The router's product and the routing kernel: picks then weights [rows][k] at `routes`.
  void route_on_device(const Matrix& router, Activations x, const RouteRequest& request,
                       int32_t* routes);
  RouteResult meaningless_route(size_t count);
  // rank_experts()'s launches, its ranking left in scratch_.ranked.
  void queue_ranking(const Matrix& router, Activations x, int count);
  // The experts' device pointers of a layer routed in place: gate, up, down [n_expert] each.
  const uint8_t* const* expert_table(int layer, std::span<const ExpertMatrices> experts);
  // One routed product per pick of x's rows (routing in place): row p of y is the product of
  // `part` of expert picks[p] (device memory) with row p / k of x.
  void run_routed(const Matrix& part, ActivationRows x, const int32_t* picks,
                  const uint8_t* const* weights, int64_t n_picks, float* y, Epilogue epilogue,
                  const float* gate);
  MatmulTask task_for(const Matrix& w, int64_t x_first, int64_t n_cols, float* y, int64_t y_stride);
  const float* device_vector(const Vector& v) const;
  // Copies host values to the device buffer, asynchronously (the host copy may change after).
  template <class T>
  void upload(std::span<const T> values, DeviceBuffer& to, const char* what);
  template <class T>
  void download(const DeviceBuffer& from, size_t count, std::vector<T>& to, const char* what);

  ModelShape shape_;
  int device_;
  cudaDeviceProp properties_;
  cudaStream_t stream_;
  Status failure_;
  WeightPlacement weights_;
  CudaScratch scratch_;
  int64_t allocated_tokens_ = 0;
  BatchActivations batch_;
  uint64_t conversions_ = 0;  // a clock for the converted sets' least recent use
  // gather_expert_inputs' views, which compute_experts reads.
  ActivationRows gathered_gate_, gathered_up_;
  QuantType down_input_type_ = QuantType::kF32;
  // Host copies the ops hand out.
  std::vector<int32_t> picks_, ranked_, host_ints_;
  std::vector<const uint8_t*> host_table_;
  int64_t tokens_routed_in_place_ = 0;   // this forward pass's
  bool routed_layers_in_place_ = false;  // since the last logits()
  StepMode step_mode_ = StepMode::kLaunch;
  RecordedStep recorded_;
  RecordedLayers recorded_layers_;
  int repeatable_layer_ = -1;  // the layer whose ops are being recorded or replayed
  // The last repeatable step run without a recording: the next one for the same cache and
  // scratch is recorded (the first wrote what a recording must not: the expert tables).
  uint64_t unrecorded_cache_id_ = 0;
  int64_t unrecorded_tokens_ = 0;
  int64_t next_position_slot_ = 0, batch_first_position_slot_ = 0;
  std::vector<float> weights_out_, row_product_, host_view_, host_floats_, expert_rows_;
  // write_expert_outputs' page-locked copy of its rows, reused once `expert_rows_copied_` says
  // the copies from it have run; made at its first use.
  PinnedBuffer expert_rows_staging_;
  cudaEvent_t expert_rows_copied_ = nullptr;
  double device_wait_ms_ = 0;
};

template <class T>
void CudaBackend::upload(std::span<const T> values, DeviceBuffer& to, const char* what) {
  STRATA_CHECK_LE(values.size_bytes(), to.bytes());
  STRATA_CHECK(step_mode_ == StepMode::kLaunch);  // a recording reads page-locked memory only
  // From pageable memory: the copy is staged before the call returns.
  ok(cudaMemcpyAsync(to.data(), values.data(), values.size_bytes(), cudaMemcpyHostToDevice,
                     stream_),
     what);
}

template <class T>
void CudaBackend::download(const DeviceBuffer& from, size_t count, std::vector<T>& to,
                           const char* what) {
  to.resize(count);
  STRATA_CHECK(step_mode_ == StepMode::kLaunch);  // a repeatable step reads back only its logits
  if (!failure_.ok()) return;
  // Into pageable memory: returns once the stream's work before it and the copy are done.
  const WaitClock clock(device_wait_ms_);
  ok(cudaMemcpyAsync(to.data(), from.data(), count * sizeof(T), cudaMemcpyDeviceToHost, stream_),
     what);
}

}  // namespace strata::cuda
