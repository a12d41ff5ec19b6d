#include "cuda/cuda_backend.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "backend/cuda_backend.h"
#include "base/check.h"
#include "cuda/convert_rows.h"
#include "cuda/device_slot_memory.h"
#include "cuda/elementwise.h"
#include "cuda/topk.h"

namespace strata {
namespace cuda {
namespace {

// The kernels' numbering of formats is QuantType's (formats.h).
#define STRATA_SAME_ID(name) \
  static_assert(uint32_t(Format::name) == uint32_t(QuantType::name), #name " ids differ")
STRATA_SAME_ID(kF32);
STRATA_SAME_ID(kF16);
STRATA_SAME_ID(kBF16);
STRATA_SAME_ID(kQ4_0);
STRATA_SAME_ID(kQ4_1);
STRATA_SAME_ID(kQ5_0);
STRATA_SAME_ID(kQ5_1);
STRATA_SAME_ID(kQ8_0);
STRATA_SAME_ID(kQ8_1);
STRATA_SAME_ID(kQ2_K);
STRATA_SAME_ID(kQ3_K);
STRATA_SAME_ID(kQ4_K);
STRATA_SAME_ID(kQ5_K);
STRATA_SAME_ID(kQ6_K);
STRATA_SAME_ID(kQ8_K);
STRATA_SAME_ID(kIQ4_NL);
STRATA_SAME_ID(kIQ4_XS);
STRATA_SAME_ID(kQ2_0);
#undef STRATA_SAME_ID

Format format_of(QuantType type) { return Format(uint32_t(type)); }
QuantType activation_type(QuantType weights) { return quant_traits(weights).vec_dot_type; }

// Shared memory the attention kernel's scores may take: the device's limit for a block, less a
// margin for the kernel's static shared memory (2.4 KB at 512 threads a block).
size_t attention_shared_limit(const cudaDeviceProp& properties) {
  return properties.sharedMemPerBlockOptin - 4096;
}

}  // namespace

CudaBackend::CudaBackend(const ModelShape& shape, int device, cudaDeviceProp properties,
                         cudaStream_t stream)
    : shape_(shape), device_(device), properties_(properties), stream_(stream) {}

CudaBackend::~CudaBackend() {
  forget_recorded_step();
  if (expert_rows_copied_) cudaEventDestroy(expert_rows_copied_);
  scratch_.release();
  cudaStreamDestroy(stream_);
}

std::string CudaBackend::describe() const {
  int driver = 0;
  cudaDriverGetVersion(&driver);
  return fmt::format("cuda: {} (device {}, {:.1f} GiB, compute {}.{}, driver {}.{})",
                     properties_.name, device_,
                     double(properties_.totalGlobalMem) / double(uint64_t(1) << 30),
                     properties_.major, properties_.minor, driver / 1000, driver % 1000 / 10);
}

bool CudaBackend::ok(cudaError_t error, const char* operation) {
  if (error != cudaSuccess && failure_.ok()) failure_ = cuda_status(error, operation);
  return failure_.ok();
}

bool CudaBackend::ok(const Status& status) {
  if (!status.ok() && failure_.ok()) failure_ = status;
  return failure_.ok();
}

Status CudaBackend::place(const void* host, size_t bytes) { return weights_.place(host, bytes); }

Result<std::unique_ptr<KvCache>> CudaBackend::make_kv_cache(int64_t n_ctx) {
  const size_t shared = attention_shared_bytes(n_ctx, shape_.head_dim);
  const size_t limit = attention_shared_limit(properties_);
  if (shared > limit)
    return Status::errorf(
        "cuda: a context of {} positions needs {} bytes of shared memory for attention's "
        "scores; {} has {} (at most {} positions)",
        n_ctx, shared, properties_.name, limit, limit / sizeof(float) - size_t(shape_.head_dim));
  STRATA_ASSIGN_OR_RETURN(auto cache, CudaKvCache::create(shape_, n_ctx));
  return std::unique_ptr<KvCache>(std::move(cache));
}

uint64_t CudaBackend::kv_cache_bytes(int64_t n_ctx) const {
  return CudaKvCache::bytes_for(shape_, n_ctx);
}

uint64_t CudaBackend::kv_cache_bytes_per_position() const {
  return CudaKvCache::bytes_per_position(shape_);
}

Result<std::unique_ptr<ExpertSlotMemory>> CudaBackend::make_expert_slot_memory(
    std::span<const SlotClassShape> classes, size_t alignment) {
  STRATA_ASSIGN_OR_RETURN(auto memory,
                          DeviceSlotMemory::create(classes, alignment, device_, stream_));
  for (const DeviceSlotMemory::Block& block : memory->blocks())
    weights_.compute_in_place(block.begin, block.bytes);
  return std::unique_ptr<ExpertSlotMemory>(std::move(memory));
}

std::optional<double> CudaBackend::measure_memory_bandwidth() {
  // Twice the L2 cache and more: the copies stream through device memory.
  constexpr size_t kBytes = size_t(512) << 20;
  if (!failure_.ok() || !ok(cudaStreamSynchronize(stream_), "finishing the batch"))
    return std::nullopt;
  // Through DeviceBuffer, so that the peak of device memory held counts the probe's too.
  Result<DeviceBuffer> from = DeviceBuffer::allocate(kBytes, "the bandwidth probe");
  Result<DeviceBuffer> to = DeviceBuffer::allocate(kBytes, "the bandwidth probe");
  float ms = INFINITY;
  if (from.ok() && to.ok() &&
      cudaMemsetAsync(from.value().data(), 1, kBytes, stream_) == cudaSuccess)
    ms = fastest_copy_ms(to.value().data(), from.value().data(), kBytes, cudaMemcpyDeviceToDevice);
  cudaGetLastError();  // a failed allocation is reported by the nullopt alone
  if (!std::isfinite(ms) || ms <= 0) return std::nullopt;
  return 2.0 * double(kBytes) / (double(ms) / 1e3);
}

std::optional<double> CudaBackend::measure_host_to_device_bandwidth() {
  // Long enough for the bus's steady rate (about a millisecond a pass at 55 GB/s), small
  // enough that a host budget (--mem) has room for it beside the run.
  constexpr size_t kBytes = size_t(64) << 20;
  if (!failure_.ok() || !ok(cudaStreamSynchronize(stream_), "finishing the batch"))
    return std::nullopt;
  Result<PinnedBuffer> from = PinnedBuffer::allocate(kBytes, "the bus probe");
  Result<DeviceBuffer> to = DeviceBuffer::allocate(kBytes, "the bus probe");
  float ms = INFINITY;
  if (from.ok() && to.ok()) {
    std::fill_n(from.value().data(), kBytes, uint8_t(1));
    ms = fastest_copy_ms(to.value().data(), from.value().data(), kBytes, cudaMemcpyHostToDevice);
  }
  cudaGetLastError();
  if (!std::isfinite(ms) || ms <= 0) return std::nullopt;
  return double(kBytes) / (double(ms) / 1e3);
}

float CudaBackend::fastest_copy_ms(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
  constexpr int kPasses = 5;
  cudaEvent_t start = nullptr, stop = nullptr;
  float best_ms = INFINITY;
  if (cudaEventCreate(&start) == cudaSuccess && cudaEventCreate(&stop) == cudaSuccess) {
    for (int pass = 0; pass <= kPasses; ++pass) {  // pass 0 warms up
      float ms = 0;
      if (cudaEventRecord(start, stream_) != cudaSuccess ||
          cudaMemcpyAsync(to, from, bytes, kind, stream_) != cudaSuccess ||
          cudaEventRecord(stop, stream_) != cudaSuccess ||
          cudaEventSynchronize(stop) != cudaSuccess ||
          cudaEventElapsedTime(&ms, start, stop) != cudaSuccess) {
        best_ms = INFINITY;
        break;
      }
      if (pass > 0) best_ms = std::min(best_ms, ms);
    }
  }
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  return best_ms;
}

std::optional<uint64_t> CudaBackend::peak_own_memory_bytes() const {
  return peak_device_bytes_held();
}

uint64_t CudaBackend::scratch_bytes(const ScratchShape& shape) const {
  return CudaScratch::bytes_for(shape_, shape);
}

void CudaBackend::release_scratch() {
  // The ops queued may still read the scratch.
  ok(cudaStreamSynchronize(stream_), "finishing the batch");
  forget_steps();
  scratch_.release();
  allocated_tokens_ = 0;
}

BatchActivations& CudaBackend::begin_batch(int64_t n_tokens) {
  STRATA_CHECK(step_mode_ == StepMode::kLaunch);  // a repeatable step ends with its logits
  if (n_tokens > allocated_tokens_ && failure_.ok()) {
    ok(cudaStreamSynchronize(stream_), "finishing the batch");
    forget_steps();
    if (ok(scratch_.allocate(shape_, n_tokens))) {
      allocated_tokens_ = n_tokens;
      next_position_slot_ = 0;
    }
  }
  if (next_position_slot_ + n_tokens > CudaScratch::kPositionSlots) {
    // The ring wraps: the copies from the slots it reuses have run.
    ok(cudaStreamSynchronize(stream_), "finishing the batch");
    next_position_slot_ = 0;
  }
  batch_first_position_slot_ = next_position_slot_;
  auto rows = [&](const DeviceBuffer& buffer) {
    return Activations{buffer.as<float>(), n_tokens, shape_.n_embd};
  };
  batch_ = {rows(scratch_.hidden), rows(scratch_.normed), rows(scratch_.lookahead),
            rows(scratch_.moe_out)};
  for (ConvertedRows& set : scratch_.general) set.source = nullptr;
  return batch_;
}

const float* CudaBackend::device_vector(const Vector& v) const {
  return v.empty() ? nullptr : weights_.resolve(v.data());
}

void CudaBackend::written(const float* buffer) {
  for (ConvertedRows& set : scratch_.general)
    if (set.source == buffer) set.source = nullptr;
}

void CudaBackend::convert_into(const float* x, int64_t x_stride, ConvertedRows& set, Format format,
                               int64_t n_rows, int64_t n_in, std::span<const RowRange> ranges) {
  const ConvertRequest request{x, x_stride, set.view(format, n_rows, n_in), ranges};
  ok(launch_convert_rows(request, stream_), "converting activations");
  set.source = x;
  set.format = format;
  set.n_rows = n_rows;
  set.n_in = n_in;
  set.last_use = ++conversions_;
}

ActivationRows CudaBackend::converted(Activations x, QuantType type) {
  const Format format = format_of(activation_type(type));
  if (format == Format::kF32) {
    ActivationRows rows;
    rows.format = Format::kF32;
    rows.n_in = x.width;
    rows.values = x.data;
    return rows;
  }
  ConvertedRows* oldest = &scratch_.general[0];
  for (ConvertedRows& set : scratch_.general) {
    if (set.source == x.data && set.format == format && set.n_rows == x.n_rows &&
        set.n_in == x.width) {
      set.last_use = ++conversions_;
      return set.view(format, x.n_rows, x.width);
    }
    if (set.last_use < oldest->last_use) oldest = &set;
  }
  const RowRange all{0, x.n_rows};
  convert_into(x.data, x.width, *oldest, format, x.n_rows, x.width, {&all, 1});
  return oldest->view(format, x.n_rows, x.width);
}

ActivationRows CudaBackend::normed_and_converted(const Vector& weight, Activations x,
                                                 Activations out, QuantType type) {
  const Format format = format_of(activation_type(type));
  if (format == Format::kF32 || !failure_.ok()) {
    rms_norm(weight, x, out);
    return converted(out, type);
  }
  written(out.data);
  ConvertedRows* oldest = &scratch_.general[0];
  for (ConvertedRows& set : scratch_.general)
    if (set.last_use < oldest->last_use) oldest = &set;
  const NormAndConvertRequest request{x.data,
                                      x.width,
                                      device_vector(weight),
                                      shape_.rms_eps,
                                      x.n_rows,
                                      out.data,
                                      oldest->view(format, x.n_rows, x.width)};
  ok(launch_norm_and_convert(request, stream_), "an RMS norm");
  oldest->source = out.data;
  oldest->format = format;
  oldest->n_rows = x.n_rows;
  oldest->n_in = x.width;
  oldest->last_use = ++conversions_;
  return request.out;
}

MatmulTask CudaBackend::task_for(const Matrix& w, int64_t x_first, int64_t n_cols, float* y,
                                 int64_t y_stride) {
  STRATA_CHECK(!w.rearrange_before_use);
  MatmulTask task;
  task.w = weights_.resolve(w.data);
  task.n_out = w.n_out;
  task.x_first = x_first;
  task.n_cols = n_cols;
  task.y = y;
  task.y_stride = y_stride;
  return task;
}

void CudaBackend::run(std::span<const Product> products) {
  if (!failure_.ok()) return;
  std::vector<bool> done(products.size(), false);
  std::vector<MatmulTask> tasks;
  for (size_t i = 0; i < products.size(); ++i) {
    if (done[i]) continue;
    const Product& first = products[i];
    tasks.clear();
    for (size_t j = i; j < products.size(); ++j) {
      const Product& p = products[j];
      if (done[j] || p.w->type != first.w->type || p.w->grouped_rows != first.w->grouped_rows ||
          p.w->n_in != first.w->n_in || p.x.values != first.x.values ||
          p.x.format != first.x.format || p.x.row_map != first.x.row_map ||
          p.x.broadcast != first.x.broadcast)
        continue;
      tasks.push_back(p.task);
      done[j] = true;
    }
    const MatmulRequest request{format_of(first.w->type),
                                first.w->grouped_rows,
                                first.w->n_in,
                                first.w->row_bytes(),
                                first.x,
                                tasks};
    if (!ok(launch_matmul(request, stream_), "a matrix product")) return;
  }
}

void CudaBackend::embed(const Matrix& table, std::span<const int32_t> tokens, Activations hidden) {
  if (!failure_.ok()) return;
  // Page-locked staging, which a recorded step's copy reads when it runs. The batch before has
  // been read back (logits), so its copy has run.
  STRATA_CHECK_LE(tokens.size_bytes(), scratch_.token_staging.bytes());
  std::copy(tokens.begin(), tokens.end(), scratch_.token_staging.as<int32_t>());
  if (replaying()) return;
  ok(cudaMemcpyAsync(scratch_.token_ids.data(), scratch_.token_staging.data(), tokens.size_bytes(),
                     cudaMemcpyHostToDevice, stream_),
     "copying token ids to the device");
  ok(launch_dequantize_rows(format_of(table.type), weights_.resolve(table.data), table.row_bytes(),
                            table.n_in, scratch_.token_ids.as<int32_t>(), int64_t(tokens.size()),
                            hidden.data, stream_),
     "the embedding");
  written(hidden.data);
}

void CudaBackend::rms_norm(const Vector& weight, Activations x, Activations out) {
  if (!failure_.ok() || replaying()) return;
  ok(launch_rms_norm(x.data, x.width, device_vector(weight), x.width, x.n_rows, shape_.rms_eps,
                     out.data, out.width, stream_),
     "an RMS norm");
  written(out.data);
}

void CudaBackend::route_on_device(const Matrix& router, Activations x, const RouteRequest& request,
                                  int32_t* routes) {
  const int64_t n = x.n_rows, n_expert = router.n_out;
  const Product product{&router, converted(x, router.type),
                        task_for(router, 0, n, scratch_.router_logits.as<float>(), n_expert)};
  run({&product, 1});
  const bool cache_aware = request.moce_bonus != 0.0f;
  if (cache_aware) upload(request.resident, scratch_.resident, "copying residency to the device");
  RouteLaunch launch;
  launch.logits = scratch_.router_logits.as<float>();
  launch.n_tokens = n;
  launch.n_expert = n_expert;
  launch.k = request.k;
  launch.renormalize = request.renormalize;
  launch.moce_bonus = request.moce_bonus;
  launch.moce_protect = request.moce_protect;
  launch.resident = cache_aware ? scratch_.resident.data() : nullptr;
  launch.picks = routes;
  launch.weights = reinterpret_cast<float*>(routes + n * request.k);
  ok(launch_route(launch, stream_), "routing");
}

RouteResult CudaBackend::route(const Matrix& router, Activations x, const RouteRequest& request) {
  const size_t count = size_t(x.n_rows * request.k);
  const size_t ranked = size_t(request.lookahead.n_rows * request.lookahead_count);
  if (failure_.ok() && !replaying()) {
    route_on_device(router, x, request, scratch_.route_out.as<int32_t>());
    if (ranked > 0)
      queue_ranking(*request.lookahead_router, request.lookahead, request.lookahead_count);
    // Into page-locked memory, both read back in one wait: the ranking after the routes.
    int32_t* readback = scratch_.route_readback.as<int32_t>();
    if (failure_.ok())
      ok(cudaMemcpyAsync(readback, scratch_.route_out.data(), 2 * count * 4, cudaMemcpyDeviceToHost,
                         stream_),
         "copying routes to the host");
    if (failure_.ok() && ranked > 0)
      ok(cudaMemcpyAsync(readback + 2 * count, scratch_.ranked.data(), ranked * 4,
                         cudaMemcpyDeviceToHost, stream_),
         "copying rankings to the host");
    if (failure_.ok() && request.input_to_host)
      ok(cudaMemcpyAsync(readback + 2 * count + ranked, x.data, size_t(x.n_rows * x.width) * 4,
                         cudaMemcpyDeviceToHost, stream_),
         "copying the experts' input to the host");
  }
  if (repeatable_layer_ >= 0) launch_recorded_layer();
  if (failure_.ok()) {
    const WaitClock clock(device_wait_ms_);
    ok(cudaStreamSynchronize(stream_), "routing");
  }
  if (!failure_.ok()) {
    RouteResult meaningless = meaningless_route(count);
    ranked_.assign(ranked, 0);
    meaningless.ranked = ranked_;
    return meaningless;
  }
  const int32_t* picks = scratch_.route_readback.as<int32_t>();
  RouteResult result{{picks, count},
                     {reinterpret_cast<const float*>(picks + count), count},
                     {picks + 2 * count, ranked}};
  if (request.input_to_host)
    result.input = {reinterpret_cast<const float*>(picks + 2 * count + ranked),
                    size_t(x.n_rows * x.width)};
  return result;
}

RouteResult CudaBackend::meaningless_route(size_t count) {
  // Valid expert ids, so that the layer loop runs to its end and reports the failure.
  picks_.assign(count, 0);
  weights_out_.assign(count, 0.0f);
  return {picks_, weights_out_};
}

void CudaBackend::queue_ranking(const Matrix& router, Activations x, int count) {
  const int64_t n = x.n_rows, n_expert = router.n_out;
  if (!failure_.ok()) return;
  const Product product{&router, converted(x, router.type),
                        task_for(router, 0, n, scratch_.rank_logits.as<float>(), n_expert)};
  run({&product, 1});
  ok(launch_rank(scratch_.rank_logits.as<float>(), n, n_expert, count,
                 scratch_.ranked.as<int32_t>(), stream_),
     "ranking experts");
}

std::span<const int32_t> CudaBackend::rank_experts(const Matrix& router, Activations x, int count) {
  queue_ranking(router, x, count);
  download(scratch_.ranked, size_t(x.n_rows * count), ranked_, "copying rankings to the host");
  if (!failure_.ok()) std::fill(ranked_.begin(), ranked_.end(), 0);
  return ranked_;
}

std::span<const float> CudaBackend::product_of_row(const Matrix& w, Activations x, int64_t row) {
  if (failure_.ok() && scratch_.row_product.bytes() < size_t(w.n_out) * sizeof(float)) {
    Result<DeviceBuffer> buffer =
        DeviceBuffer::allocate(size_t(w.n_out) * sizeof(float), "the predictor's scores");
    if (ok(buffer.status())) scratch_.row_product = std::move(buffer).value();
  }
  if (failure_.ok()) {
    const Product product{&w, converted(x, w.type),
                          task_for(w, row, 1, scratch_.row_product.as<float>(), w.n_out)};
    run({&product, 1});
  }
  download(scratch_.row_product, size_t(w.n_out), row_product_, "copying scores to the host");
  return row_product_;
}

std::span<const float> CudaBackend::host_view(Activations x) {
  host_view_.resize(size_t(x.n_rows * x.width));
  const WaitClock clock(device_wait_ms_);  // into pageable memory: the copy has run on return
  if (failure_.ok())
    ok(cudaMemcpyAsync(host_view_.data(), x.data, host_view_.size() * sizeof(float),
                       cudaMemcpyDeviceToHost, stream_),
       "copying activations to the host");
  return host_view_;
}

void CudaBackend::load_rows(std::span<const float> rows, Activations x) {
  STRATA_CHECK(step_mode_ == StepMode::kLaunch);
  if (!failure_.ok()) return;
  ok(cudaMemcpyAsync(x.data, rows.data(), rows.size_bytes(), cudaMemcpyHostToDevice, stream_),
     "copying activations to the device");
  written(x.data);
}

void CudaBackend::add(Activations x, Activations y) {
  if (!failure_.ok() || replaying()) return;
  ok(launch_add(x.data, y.data, x.n_rows * x.width, stream_), "an addition");
  written(y.data);
}

void CudaBackend::logits(const Vector& norm, const Matrix& output, Activations hidden,
                         int64_t first_row, std::vector<float>& logits) {
  const int64_t n_rows = hidden.n_rows - first_row, n_vocab = output.n_out;
  const size_t bytes = size_t(n_rows * n_vocab) * sizeof(float);
  if (failure_.ok() && !replaying() && scratch_.logits.bytes() < bytes) {
    STRATA_CHECK(step_mode_ == StepMode::kLaunch);  // a recording allocates nothing
    scratch_.logits = DeviceBuffer();
    Result<DeviceBuffer> buffer = DeviceBuffer::allocate(bytes, "the logits");
    if (ok(buffer.status())) scratch_.logits = std::move(buffer).value();
  }
  if (failure_.ok() && !replaying()) {
    const Activations normed{scratch_.normed.as<float>(), n_rows, hidden.width};
    rms_norm(norm, {hidden.data + first_row * hidden.width, n_rows, hidden.width}, normed);
    const Product product{&output, converted(normed, output.type),
                          task_for(output, 0, n_rows, scratch_.logits.as<float>(), n_vocab)};
    run({&product, 1});
  }
  if (failure_.ok() && !replaying() && routed_layers_in_place_) {
    ok(cudaMemcpyAsync(scratch_.routes_in_place.data(), scratch_.device_routes.data(),
                       scratch_.device_routes.bytes(), cudaMemcpyDeviceToHost, stream_),
       "copying routes to the host");
  }
  routed_layers_in_place_ = false;
  // The copies below return after it.
  if (n_rows > 1) {
    download(scratch_.logits, size_t(n_rows * n_vocab), logits, "copying logits to the host");
    return;
  }
  // One row, as a recorded step reads it back: into page-locked memory.
  if (failure_.ok() && !replaying())
    ok(cudaMemcpyAsync(scratch_.logits_readback.data(), scratch_.logits.data(), bytes,
                       cudaMemcpyDeviceToHost, stream_),
       "copying logits to the host");
  if (step_mode_ != StepMode::kLaunch) launch_recorded_step();
  logits.resize(size_t(n_vocab));
  if (!failure_.ok()) return;
  {
    const WaitClock clock(device_wait_ms_);
    if (!ok(cudaStreamSynchronize(stream_), "copying logits to the host")) return;
  }
  const float* row = scratch_.logits_readback.as<float>();
  std::copy(row, row + n_vocab, logits.begin());
}

}  // namespace cuda

bool cuda_backend_built() { return true; }

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

Result<std::unique_ptr<Backend>> make_cuda_backend(const ModelShape& shape, int device) {
  int count = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&count); error != cudaSuccess) {
    cudaGetLastError();
    return Status::errorf("--device cuda: no usable CUDA driver or device ({})",
                          cudaGetErrorString(error));
  }
  if (count == 0) return Status::error("--device cuda: no CUDA device found");
  if (device < 0 || device >= count)
    return Status::errorf("--gpu {}: this machine has {} CUDA device{} (0 to {})", device, count,
                          count == 1 ? "" : "s", count - 1);
  cudaDeviceProp properties;
  STRATA_RETURN_IF_ERROR(cuda::cuda_status(cudaGetDeviceProperties(&properties, device),
                                           "reading the device's properties"));
  if (properties.major < 9)
    return Status::errorf(
        "--device cuda: device {} ({}) has compute capability {}.{}; this build's kernels are "
        "for 9.0 (Hopper)",
        device, properties.name, properties.major, properties.minor);
  const int64_t widths[] = {shape.n_embd, shape.n_head * shape.head_dim, shape.n_ff_expert,
                            shape.n_ff_shared};
  for (const int64_t width : widths)
    if (width % cuda::kChunkWeights != 0)
      return Status::errorf(
          "--device cuda: a row length of {} is not a multiple of {}, which "
          "the CUDA kernels need",
          width, cuda::kChunkWeights);
  if (shape.head_dim > cuda::kMaxHeadDim)
    return Status::errorf(
        "--device cuda: heads of {} dimensions are more than the {} the "
        "attention kernels take",
        shape.head_dim, cuda::kMaxHeadDim);
  if (shape.n_expert > cuda::kMaxRoutedExperts || shape.n_expert_used > cuda::kMaxExpertsUsed)
    return Status::errorf(
        "--device cuda: {} experts, {} per token, are more than the routing "
        "kernel takes ({}, {})",
        shape.n_expert, shape.n_expert_used, cuda::kMaxRoutedExperts, cuda::kMaxExpertsUsed);
  // The host waits for the routes of layers not routed in place: spinning answers sooner than
  // sleeping.
  cudaSetDeviceFlags(cudaDeviceScheduleSpin);
  cudaGetLastError();  // fails harmlessly where the device's context exists already
  STRATA_RETURN_IF_ERROR(cuda::cuda_status(cudaSetDevice(device), "selecting the device"));
  STRATA_RETURN_IF_ERROR(cuda::cuda_status(
      cuda::allow_attention_shared_bytes(cuda::attention_shared_limit(properties)),
      "setting attention's shared memory"));
  cudaStream_t stream;
  STRATA_RETURN_IF_ERROR(cuda::cuda_status(
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream"));
  return std::unique_ptr<Backend>(
      std::make_unique<cuda::CudaBackend>(shape, device, properties, stream));
}

}  // namespace strata
