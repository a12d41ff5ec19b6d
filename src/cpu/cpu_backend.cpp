#include "cpu/cpu_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "backend/host_slot_memory.h"
#include "base/check.h"
#include "base/cpu_features.h"
#include "cpu/elementwise.h"
#include "cpu/topk.h"

namespace strata {

int64_t CpuBackend::min_rows_per_range(int64_t width) {
  return std::max<int64_t>(1, (int64_t(16) << 10) / width);
}

Result<std::unique_ptr<Backend>> make_cpu_backend(const ModelShape& shape,
                                                  const WeightFormats& formats, int n_threads) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ThreadPool> pool, ThreadPool::start(n_threads));
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(shape, formats, std::move(pool)));
}

CpuBackend::CpuBackend(const ModelShape& shape, const WeightFormats& formats,
                       std::unique_ptr<ThreadPool> pool)
    : shape_(shape), formats_(formats), pool_(std::move(pool)) {}

std::string CpuBackend::describe() const {
  return fmt::format("cpu: {} threads, {} kernels", pool_->size(), simd_kernels_name());
}

Result<std::unique_ptr<KvCache>> CpuBackend::make_kv_cache(int64_t n_ctx) {
  return std::unique_ptr<KvCache>(std::make_unique<CpuKvCache>(shape_, n_ctx));
}

uint64_t CpuBackend::kv_cache_bytes(int64_t n_ctx) const {
  return CpuKvCache::bytes_for(shape_, n_ctx);
}

uint64_t CpuBackend::kv_cache_bytes_per_position() const {
  return CpuKvCache::bytes_per_position(shape_);
}

Result<std::unique_ptr<ExpertSlotMemory>> CpuBackend::make_expert_slot_memory(
    std::span<const SlotClassShape> classes, size_t alignment) {
  return make_host_slot_memory(classes, alignment);
}

uint64_t CpuBackend::scratch_bytes(const ScratchShape& shape) const {
  return CpuScratch::bytes_for(shape_, formats_, shape, pool_->size());
}

void CpuBackend::release_scratch() {
  scratch_.release();
  allocated_ = ScratchShape{.max_tokens = 0};
  invalidate_converted(nullptr);
}

BatchActivations& CpuBackend::begin_batch(int64_t n_tokens) {
  if (n_tokens > allocated_.max_tokens) {
    allocated_ = ScratchShape{.max_tokens = n_tokens};
    scratch_.allocate(shape_, formats_, allocated_, pool_->size());
  }
  auto rows = [&](std::vector<float>& buffer) {
    return Activations{buffer.data(), n_tokens, shape_.n_embd};
  };
  batch_ = {rows(scratch_.hidden), rows(scratch_.normed), rows(scratch_.lookahead),
            rows(scratch_.moe_out)};
  invalidate_converted(nullptr);
  return batch_;
}

const ConvertedRows& CpuBackend::converted(Activations x, QuantType type) {
  const size_t slot = size_t(type);
  STRATA_CHECK_LT(slot, scratch_.converted.size());
  if (converted_source_ != x.data) invalidate_converted(nullptr);
  converted_source_ = x.data;
  ConvertedRows& rows = scratch_.converted[slot];
  if (!converted_valid_[slot]) {
    reshape_rows(rows, type, x.n_rows, x.width);
    convert_rows(*pool_, x.data, x.width, 0, x.n_rows, rows);
    converted_valid_[slot] = true;
  }
  return rows;
}

void CpuBackend::invalidate_converted(const float* written) {
  if (written && written != converted_source_) return;
  converted_valid_.fill(false);
  converted_source_ = nullptr;
}

void CpuBackend::embed(const Matrix& table, std::span<const int32_t> tokens, Activations hidden) {
  const QuantTraits& traits = quant_traits(table.type);
  pool_->parallel_ranges(int64_t(tokens.size()), min_rows_per_range(hidden.width),
                         [&](int64_t begin, int64_t end) {
                           for (int64_t t = begin; t < end; ++t)
                             traits.dequantize_row(table.row(tokens[size_t(t)]),
                                                   hidden.data + t * hidden.width, hidden.width);
                         });
  invalidate_converted(hidden.data);
}

void CpuBackend::rms_norm(const Vector& weight, Activations x, Activations out) {
  pool_->parallel_ranges(x.n_rows, min_rows_per_range(x.width), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t)
      strata::rms_norm(x.data + t * x.width, weight.data(), x.width, shape_.rms_eps,
                       out.data + t * out.width);
  });
  invalidate_converted(out.data);
}

RouteResult CpuBackend::route(const Matrix& router, Activations x, const RouteRequest& request) {
  const int64_t n = x.n_rows, n_expert = router.n_out;
  const int k = request.k;
  const MatmulJob job{&router,
                      &converted(x, quant_traits(router.type).vec_dot_type),
                      0,
                      n,
                      scratch_.router_logits.data(),
                      n_expert};
  run_matmuls(*pool_, {&job, 1});
  const bool cache_aware = request.moce_bonus != 0.0f;
  const int protect = std::clamp(request.moce_protect, 0, k);
  auto route_token = [&](int64_t t) {
    float* logits = scratch_.router_logits.data() + t * n_expert;
    int32_t* picks = scratch_.picks.data() + t * k;
    if (cache_aware) {
      // Resident experts get the bonus, except that the protected top picks come first from
      // the unmodified logits (they are excluded from the rest).
      float* scores = scratch_.moce_scores.data();
      top_k(logits, n_expert, std::max(protect, 1), picks);
      for (int64_t e = 0; e < n_expert; ++e)
        scores[e] = logits[e] + (request.resident[size_t(e)] ? request.moce_bonus : 0.0f);
      for (int i = 0; i < protect; ++i) scores[picks[i]] = -INFINITY;
      if (protect < k) top_k(scores, n_expert, k - protect, picks + protect);
    }
    softmax(logits, n_expert);  // now probabilities
    if (!cache_aware) top_k(logits, n_expert, k, picks);
    float* weights = scratch_.pick_weights.data() + t * k;
    double sum = 0;
    for (int i = 0; i < k; ++i) {
      weights[i] = logits[picks[i]];
      sum += double(weights[i]);
    }
    if (request.renormalize)
      for (int i = 0; i < k; ++i) weights[i] /= float(sum);
  };
  // Cache-aware routing shares one row of scores, so its tokens go one after another.
  if (cache_aware) {
    for (int64_t t = 0; t < n; ++t) route_token(t);
  } else {
    pool_->parallel_ranges(n, min_rows_per_range(n_expert), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) route_token(t);
    });
  }
  RouteResult result{{scratch_.picks.data(), size_t(n * k)},
                     {scratch_.pick_weights.data(), size_t(n * k)}};
  if (request.input_to_host) result.input = host_view(x);
  if (request.lookahead_count > 0)
    result.ranked =
        rank_experts(*request.lookahead_router, request.lookahead, request.lookahead_count);
  return result;
}

std::span<const int32_t> CpuBackend::rank_experts(const Matrix& router, Activations x, int count) {
  const int64_t n = x.n_rows, n_expert = router.n_out;
  matmul(*pool_, router, x.data, n, scratch_.rank_logits.data(), scratch_.rows);
  for (int64_t t = 0; t < n; ++t)
    top_k(scratch_.rank_logits.data() + t * n_expert, n_expert, count,
          scratch_.ranked.data() + t * count);
  return {scratch_.ranked.data(), size_t(n * count)};
}

std::span<const float> CpuBackend::product_of_row(const Matrix& w, Activations x, int64_t row) {
  // Sized by its first use (from empty: exactly), as begin_batch() does not know the products.
  if (scratch_.row_product.size() < size_t(w.n_out)) scratch_.row_product.resize(size_t(w.n_out));
  // One token's product: on this thread, a pool dispatch would cost more.
  run_matmul_here({&w, &converted(x, quant_traits(w.type).vec_dot_type), row, 1,
                   scratch_.row_product.data(), w.n_out});
  return {scratch_.row_product.data(), size_t(w.n_out)};
}

std::span<const float> CpuBackend::host_view(Activations x) {
  return {x.data, size_t(x.n_rows * x.width)};
}

void CpuBackend::load_rows(std::span<const float> rows, Activations x) {
  std::copy(rows.begin(), rows.end(), x.data);
  invalidate_converted(x.data);
}

void CpuBackend::add(Activations x, Activations y) {
  add_rows(x.data, y.data, x.n_rows, x.width);
  invalidate_converted(y.data);
}

void CpuBackend::add_rows(const float* x, float* y, int64_t n_rows, int64_t width) {
  pool_->parallel_ranges(n_rows, min_rows_per_range(width), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * width; i < end * width; ++i) y[i] += x[i];
  });
}

void CpuBackend::logits(const Vector& norm, const Matrix& output, Activations hidden,
                        int64_t first_row, std::vector<float>& logits) {
  const int64_t n_rows = hidden.n_rows - first_row;
  const Activations normed{scratch_.normed.data(), n_rows, hidden.width};
  rms_norm(norm, {hidden.data + first_row * hidden.width, n_rows, hidden.width}, normed);
  logits.resize(size_t(n_rows * output.n_out));
  matmul(*pool_, output, normed.data, n_rows, logits.data(), scratch_.rows);
}

}  // namespace strata
