// The conversion kernel: a block per row; a warp per 32-value block (Q8_0, Q8_1, a value a
// lane) or per 256-value super-block (Q8_K, 8 values a lane), reducing the maximum and the sums
// exactly (integers, and maxima, do not depend on the order they are combined in).
#include <algorithm>

#include "cuda/convert_rows.h"

#include "cuda/rms_norm_row.h"

namespace strata::cuda {
namespace {

constexpr int kRangesPerLaunch = 32;
constexpr int kThreads = 1024;  // a warp per chunk of a 4096-wide row: one pass in decode
static_assert(kThreads == kNormThreads, "norm_and_convert_kernel runs both on one block");
constexpr int kWarps = kThreads / 32;

struct RangeTable {
  RowRange range[kRangesPerLaunch];
  int64_t first_block[kRangesPerLaunch + 1];
  int32_t n_ranges;
};

__device__ void convert_q8_blocks(const float* x, const ActivationRows& out, int64_t row) {
  const int lane = threadIdx.x % 32;
  const int64_t n_chunks = out.n_in / 32;
  int8_t* q = static_cast<int8_t*>(out.values) + row * out.n_in;
  for (int64_t chunk = threadIdx.x / 32; chunk < n_chunks; chunk += kWarps) {
    const float v = x[chunk * 32 + lane];
    float amax = fabsf(v);
    for (int offset = 16; offset > 0; offset /= 2)
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
    const int32_t quant = q8_unsaturated(v, q8_multiplier(amax));
    q[chunk * 32 + lane] = saturate_int8(quant);
    int32_t sum = quant;
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) {
      out.d[row * n_chunks + chunk] = q8_scale(amax);
      if (out.format == Format::kQ8_1) out.s[row * n_chunks + chunk] = q8_1_sum(amax, sum);
    }
  }
}

// The value of largest magnitude, the first one on ties: candidates are (magnitude, index).
struct Largest {
  float magnitude;
  int index;
  float value;
};

__device__ Largest better(const Largest& a, const Largest& b) {
  if (b.magnitude > a.magnitude || (b.magnitude == a.magnitude && b.index < a.index)) return b;
  return a;
}

__device__ void convert_q8_k_blocks(const float* x, const ActivationRows& out, int64_t row) {
  const int lane = threadIdx.x % 32;
  const int64_t n_super = out.n_in / 256;
  int8_t* q = static_cast<int8_t*>(out.values) + row * out.n_in;
  for (int64_t block = threadIdx.x / 32; block < n_super; block += kWarps) {
    float v[8];
    Largest largest{0.0f, 256, 0.0f};  // an all-zero block keeps a zero value: d = 0
    for (int i = 0; i < 8; ++i) {
      v[i] = x[block * 256 + lane * 8 + i];
      largest = better(largest, Largest{fabsf(v[i]), lane * 8 + i, v[i]});
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      const Largest other{__shfl_xor_sync(0xffffffffu, largest.magnitude, offset),
                          __shfl_xor_sync(0xffffffffu, largest.index, offset),
                          __shfl_xor_sync(0xffffffffu, largest.value, offset)};
      largest = better(largest, other);
    }
    const float iscale = q8_k_iscale(largest.value);
    int32_t sum = 0;
    for (int i = 0; i < 8; ++i) {
      const int8_t quant = q8_k_quant(v[i], iscale);
      q[block * 256 + lane * 8 + i] = quant;
      sum += quant;
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);  // the two lanes of a 16-value group
    if (lane % 2 == 0) out.bsums[row * (out.n_in / 16) + block * 16 + lane / 2] = int16_t(sum);
    if (lane < 8) out.d[row * (out.n_in / 32) + block * 8 + lane] = q8_k_scale(iscale);
  }
}

// `source` as stored row `row` of `out`, by the block.
__device__ void convert_row(const float* source, const ActivationRows& out, int64_t row) {
  switch (out.format) {
    case Format::kQ8_0:
    case Format::kQ8_1:
      convert_q8_blocks(source, out, row);
      break;
    case Format::kQ8_K:
      convert_q8_k_blocks(source, out, row);
      break;
    default: {
      uint16_t* values = static_cast<uint16_t*>(out.values) + row * out.n_in;
      const bool half = out.format == Format::kF16;
      for (int64_t i = threadIdx.x; i < out.n_in; i += kThreads)
        values[i] = half ? float_to_half(source[i]) : float_to_bf16(source[i]);
    }
  }
}

__global__ void __launch_bounds__(kThreads)
    convert_kernel(const float* x, int64_t x_stride, const __grid_constant__ ActivationRows out,
                   const __grid_constant__ RangeTable table) {
  int r = 0;
  while (r + 1 < table.n_ranges && blockIdx.x >= table.first_block[r + 1]) ++r;
  const int64_t row = table.range[r].first + (int64_t(blockIdx.x) - table.first_block[r]);
  convert_row(x + row * x_stride, out, row);
}

// Block r: row r normed (rms_norm_row), then the normed row converted.
__global__ void __launch_bounds__(kThreads)
    norm_and_convert_kernel(const float* x, int64_t x_stride, const float* weight, float eps,
                            float* normed, const __grid_constant__ ActivationRows out) {
  __shared__ double partial[kNormThreads / 32];
  const int64_t row = blockIdx.x;
  float* y = normed + row * out.n_in;
  rms_norm_row(x + row * x_stride, weight, out.n_in, eps, y, partial);
  __syncthreads();  // the block's writes of y are seen by the whole block
  convert_row(y, out, row);
}

}  // namespace

cudaError_t launch_norm_and_convert(const NormAndConvertRequest& request, cudaStream_t stream) {
  if (request.n_rows == 0) return cudaSuccess;
  norm_and_convert_kernel<<<unsigned(request.n_rows), kThreads, 0, stream>>>(
      request.x, request.x_stride, request.weight, request.eps, request.normed, request.out);
  return cudaGetLastError();
}

cudaError_t launch_convert_rows(const ConvertRequest& request, cudaStream_t stream) {
  for (size_t first = 0; first < request.ranges.size(); first += kRangesPerLaunch) {
    RangeTable table;
    table.n_ranges = int32_t(std::min<size_t>(kRangesPerLaunch, request.ranges.size() - first));
    table.first_block[0] = 0;
    for (int r = 0; r < table.n_ranges; ++r) {
      table.range[r] = request.ranges[first + size_t(r)];
      table.first_block[r + 1] = table.first_block[r] + table.range[r].count;
    }
    const unsigned blocks = unsigned(table.first_block[table.n_ranges]);
    if (blocks == 0) continue;
    convert_kernel<<<blocks, kThreads, 0, stream>>>(request.x, request.x_stride, request.out,
                                                    table);
    const cudaError_t launched = cudaGetLastError();
    if (launched != cudaSuccess) return launched;
  }
  return cudaSuccess;
}

}  // namespace strata::cuda
