// The kernels of matmul.h, each instantiated once per format: for the k-quants (their own float
// order) a warp-per-row mat-vec for decode and a 64 x 64-tiled GEMM for prefill; for the other
// formats, which repeat the CPU's float operations, ordered_kernel (up to 8 tokens a block) and
// decode's ordered_decode_kernel / ordered_float_decode_kernel; and the embedding row
// dequantizer.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cuda/matmul.h"

#include "cuda/async_copy.h"

namespace strata::cuda {
namespace {

// Tasks per launch: the table travels as a kernel parameter (72 bytes a task, under 4 KB), read
// in place (__grid_constant__) rather than copied to each thread's stack.
constexpr int kTasksPerLaunch = 32;
constexpr int kWarpSize = 32;
constexpr int kMatvecWarps = 4;  // rows per mat-vec block, a warp each
constexpr int kTileRows = 64, kTileCols = 64, kGemmThreads = 256;

struct TaskTable {
  MatmulTask task[kTasksPerLaunch];
  int64_t first_block[kTasksPerLaunch + 1];
  int32_t n_tasks;
};

struct MatmulShape {
  int64_t n_in;
  size_t row_bytes;
  ActivationRows x;
  RoutedWeights experts;
};

template <class F>
using WeightChunkOf = decltype(F::load(nullptr, 0, 0, 0));

template <class F>
constexpr bool kFloatFormat = std::is_same_v<WeightChunkOf<F>, FloatChunk>;

// The task a block belongs to (tasks are few: a linear scan).
__device__ __forceinline__ int task_of_block(const TaskTable& table, int64_t block) {
  int t = 0;
  while (t + 1 < table.n_tasks && block >= table.first_block[t + 1]) ++t;
  return t;
}

__device__ __forceinline__ const uint8_t* weights_of(const MatmulShape& shape,
                                                     const MatmulTask& task) {
  return task.routed_pick < 0 ? task.w
                              : shape.experts.weights[shape.experts.picks[task.routed_pick]];
}

__device__ __forceinline__ void finish(const MatmulTask& task, int64_t row, int64_t col,
                                       float result) {
  float* y = task.y + col * task.y_stride + row;
  switch (task.epilogue) {
    case Epilogue::kStore:
      *y = task.bias ? result + task.bias[row] : result;
      break;
    case Epilogue::kAccumulate:
      *y = *y + result;
      break;
    case Epilogue::kSiluTimes: {
      const float g = task.gate[col * task.y_stride + row];
      *y = g / (1.0f + exact_expf(-g)) * result;
      break;
    }
  }
}

template <class F>
__global__ void __launch_bounds__(kMatvecWarps * kWarpSize)
    matvec_kernel(const __grid_constant__ MatmulShape shape,
                  const __grid_constant__ TaskTable table) {
  const int t = task_of_block(table, blockIdx.x);
  const MatmulTask& task = table.task[t];
  const uint8_t* const weights = weights_of(shape, task);
  const int64_t row =
      (int64_t(blockIdx.x) - table.first_block[t]) * kMatvecWarps + threadIdx.x / kWarpSize;
  if (row >= task.n_out) return;  // the whole warp: no barrier follows
  const int lane = threadIdx.x % kWarpSize;
  const int64_t n_chunks = shape.n_in / kChunkWeights;
  float acc[kMatvecMaxCols];
#pragma unroll
  for (int c = 0; c < kMatvecMaxCols; ++c) acc[c] = 0.0f;
  for (int64_t chunk = lane; chunk < n_chunks; chunk += kWarpSize) {
    const auto w = F::load(weights, row, shape.row_bytes, chunk);
#pragma unroll
    for (int c = 0; c < kMatvecMaxCols; ++c)
      if (c < task.n_cols)
        acc[c] +=
            chunk_dot<F::kActivation>(w, load_int_activation(shape.x, task.x_first + c, chunk));
  }
#pragma unroll
  for (int c = 0; c < kMatvecMaxCols; ++c) {
    if (c >= task.n_cols) break;
    float sum = acc[c];
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) finish(task, row, c, sum);
  }
}

// Chunks per stage of the tiled GEMM: 4, at 56 + 48 bytes a row and column, 26 KB of shared
// memory.
constexpr int kStageChunks = 4;

struct GemmStage {
  IntChunk w[kStageChunks][kTileRows];
  IntActivationChunk x[kStageChunks][kTileCols];
};

template <class T>
__device__ __forceinline__ T zero_chunk() {
  return T{};
}

// Thread (ty, tx) of 16 x 16 computes rows ty + 16 i and columns tx + 16 j (i, j < 4) of a
// 64 x 64 tile, adding each chunk's share in chunk order.
template <class F>
__global__ void __launch_bounds__(kGemmThreads)
    gemm_kernel(const __grid_constant__ MatmulShape shape,
                const __grid_constant__ TaskTable table) {
  constexpr int kChunks = kStageChunks;
  __shared__ GemmStage stage;
  const int t = task_of_block(table, blockIdx.x);
  const MatmulTask& task = table.task[t];
  const uint8_t* const weights = weights_of(shape, task);
  const int64_t row_tiles = (task.n_out + kTileRows - 1) / kTileRows;
  const int64_t tile = int64_t(blockIdx.x) - table.first_block[t];
  const int64_t row0 = tile % row_tiles * kTileRows, col0 = tile / row_tiles * kTileCols;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t n_chunks = shape.n_in / kChunkWeights;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;

  for (int64_t chunk0 = 0; chunk0 < n_chunks; chunk0 += kChunks) {
    for (int index = threadIdx.x; index < kChunks * kTileRows; index += kGemmThreads) {
      const int k = index / kTileRows, r = index % kTileRows;
      const int64_t chunk = chunk0 + k, row = row0 + r, col = col0 + r;
      stage.w[k][r] = chunk < n_chunks && row < task.n_out
                          ? F::load(weights, row, shape.row_bytes, chunk)
                          : zero_chunk<IntChunk>();
      stage.x[k][r] = chunk < n_chunks && col < task.n_cols
                          ? load_int_activation(shape.x, task.x_first + col, chunk)
                          : zero_chunk<IntActivationChunk>();
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kChunks; ++k) {
      IntActivationChunk x[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) x[j] = stage.x[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const IntChunk w = stage.w[k][ty + 16 * i];
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += chunk_dot<F::kActivation>(w, x[j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t row = row0 + ty + 16 * i, col = col0 + tx + 16 * j;
      if (row < task.n_out && col < task.n_cols) finish(task, row, col, acc[i][j]);
    }
}

// The CPU's own order of float operations (quant/block32_avx2.h, quant/dense_avx2.h,
// quant/q4_0_groups_avx512.cpp), for the formats whose CPU kernels follow llama.cpp's or come
// within an ulp of it: the 32-weight block formats with Q8_0 or Q8_1 activations, and the float
// formats. Rounding as they round keeps the GPU's 8-bit activation quants where the CPU's (and
// llama.cpp's) fall: a 1-ulp difference upstream flips one now and then, and each flip shows
// in the logits.
//   block formats: 8 parts per row; part l accumulates fma(d_w * d_x, sum of products 4l..4l+3,
//                  acc) over the row's blocks in order (even and odd blocks into two chains,
//                  except Q8_0, which has one); Q4_1 / Q5_1 add m * s per block on the side;
//                  then ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7));
//   Q4_0 in row groups (what the CPU computes with AVX-512 VNNI): 4 parts, part k the products
//                  4k..4k+3 and 16+4k..16+4k+3 of each block, one chain; (s0 + s1) + (s2 + s3);
//   float formats: 16 parts per row; part j accumulates fma(w_i, x_i, acc) over i = j mod 16;
//                  then parts j and j + 8 are added and the 8 sums added as above.
// Every output is this sequence whatever the number of tokens, so decode and prefill agree bit
// for bit.
template <class F>
constexpr bool kCpuOrder = kFloatFormat<F> || F::kActivation != Format::kQ8_K;
template <class F>
constexpr bool kGroupedQ4_0 = std::is_same_v<F, FormatQ4_0Grouped>;
template <class F>
constexpr int kPartsOf = kFloatFormat<F> ? 16 : (kGroupedQ4_0<F> ? 4 : 8);
template <class F>
constexpr int kChainsOf = kFloatFormat<F> || kGroupedQ4_0<F> || F::kFormat == Format::kQ8_0 ? 1 : 2;
constexpr int kOrderedCols = 8;  // columns a thread accumulates at once
constexpr int kOrderedWarps = 4;

// Braces, not `= a * (b)`: clang-format 14 reads that in a variable template as `a*` a type.
template <class F>
constexpr int kOrderedRowsPerBlock{kOrderedWarps * (kWarpSize / kPartsOf<F>)};

// The ordered kernel reads its rows through shared memory, a tile of chunks at a time: each
// chain runs over the chunks of one row in order, so the row's bytes are copied in first, all
// threads of the block together, in 16-byte loads where the layout allows (a row's 8 or 16
// threads would otherwise each read the same few bytes of every chunk, and decode would wait on
// the latency of every one of those loads). Rows are 1, or 8 for Q4_0 in row groups, to a unit
// of the layout.
template <class F>
constexpr int kChunkBytesOf =
    std::is_same_v<F, FormatF32>                                    ? 128
    : std::is_same_v<F, FormatF16> || std::is_same_v<F, FormatBF16> ? 64
    : F::kFormat == Format::kQ8_0                                   ? 34
    : F::kFormat == Format::kQ4_1                                   ? 20
    : F::kFormat == Format::kQ5_0                                   ? 22
    : F::kFormat == Format::kQ5_1                                   ? 24
    // Half an 18-byte block: tiles start at even chunks (a multiple of 8).
    : F::kFormat == Format::kQ2_0 ? 9
                                  : 18;
template <class F>
constexpr int kRowsPerUnit = kGroupedQ4_0<F> ? 8 : 1;
constexpr int kStageBytes = 18432;
// Chunks per tile: a multiple of 8, so that a tile of the 32-weight formats is whole 16-byte words.
// The activations take shared memory per chunk too: a tile holds no more chunks than one of an
// 18-byte format (Q2_0's 9 bytes a chunk would double the activations' share past the limit).
template <class F>
constexpr int kTileChunkBytesOf = kChunkBytesOf<F> < 18 ? 18 : kChunkBytesOf<F>;
template <class F>
constexpr int kTileChunksOf =
    kStageBytes / (kOrderedRowsPerBlock<F> * kTileChunkBytesOf<F>) / 8 * 8 > 8
        ? kStageBytes / (kOrderedRowsPerBlock<F> * kTileChunkBytesOf<F>) / 8 * 8
        : 8;

// Words of 4 and 16 bytes are copied asynchronously (async_copy.h): the block waits for them
// with wait_for_async_copies() and a barrier.
template <class Word>
__device__ __forceinline__ void copy_units(uint8_t* dst, size_t dst_stride, const uint8_t* src,
                                           size_t src_stride, int units, size_t unit_bytes) {
  const int words = int(unit_bytes / sizeof(Word));
  for (int i = threadIdx.x; i < units * words; i += blockDim.x) {
    const int unit = i / words, word = i % words;
    Word* to = reinterpret_cast<Word*>(dst + unit * dst_stride) + word;
    const Word* from = reinterpret_cast<const Word*>(src + unit * src_stride) + word;
    if constexpr (sizeof(Word) == 16 || sizeof(Word) == 4) {
      copy_async<int(sizeof(Word))>(to, from);
    } else {
      *to = *from;
    }
  }
}

// Copies `units` runs of unit_bytes, src_stride apart, to dst_stride apart in shared memory, in
// the widest words the addresses allow (dst_stride a multiple of 16).
__device__ __forceinline__ void copy_to_shared(uint8_t* dst, size_t dst_stride, const uint8_t* src,
                                               size_t src_stride, int units, size_t unit_bytes) {
  const size_t alignment = size_t(reinterpret_cast<uintptr_t>(src)) | src_stride | unit_bytes;
  if (alignment % 16 == 0) {
    copy_units<uint4>(dst, dst_stride, src, src_stride, units, unit_bytes);
  } else if (alignment % 4 == 0) {
    copy_units<uint32_t>(dst, dst_stride, src, src_stride, units, unit_bytes);
  } else {
    copy_units<uint16_t>(dst, dst_stride, src, src_stride, units, unit_bytes);
  }
}

// Copies chunks [chunk0, chunk0 + n_chunks) of rows [row0, row0 + n_rows) into the tile, unit u
// at u * kTileChunksOf chunks' bytes.
template <class F>
__device__ __forceinline__ void stage_rows(uint8_t* tile, const uint8_t* w, size_t row_bytes,
                                           int64_t row0, int64_t n_rows, int64_t chunk0,
                                           int64_t n_chunks) {
  constexpr int kUnit = kRowsPerUnit<F>;
  const int units = int((n_rows + kUnit - 1) / kUnit);
  const size_t unit_bytes = size_t(n_chunks) * kChunkBytesOf<F> * kUnit;
  const size_t dst_stride = size_t(kTileChunksOf<F>) * kChunkBytesOf<F> * kUnit;
  const size_t src_stride = kUnit * row_bytes;
  const uint8_t* src =
      w + size_t(row0 / kUnit) * src_stride + size_t(chunk0) * kChunkBytesOf<F> * kUnit;
  copy_to_shared(tile, dst_stride, src, src_stride, units, unit_bytes);
}

// The codes of part `part` of a chunk (weights 4 part .. 4 part + 3; for row groups also the
// part 4 further on), as chunk_word(F::load(...), part) gives them, and the chunk's scales.
struct PartCodes {
  uint32_t codes, second_codes;
  float d, dmin;
};

template <class F>
__device__ __forceinline__ PartCodes load_part(const uint8_t* data, int64_t row, size_t row_bytes,
                                               int64_t chunk, int part) {
  PartCodes p;
  if constexpr (kGroupedQ4_0<F>) {
    const int r = int(row % 8);
    const uint8_t* block = data + size_t(row / 8) * 8 * row_bytes + size_t(chunk) * 144;
    const uint32_t word = load_u32(block + 16 + 16 * r + 4 * part);
    p.codes = chunk_detail::minus(word & 0x0f0f0f0fu, 8);
    p.second_codes = chunk_detail::minus(word >> 4 & 0x0f0f0f0fu, 8);
    p.d = half_to_float(load_u16(block + 2 * r));
    p.dmin = 0.0f;
  } else if constexpr (std::is_same_v<F, FormatQ4_0>) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk) * 18;
    const uint32_t word = load_u32_from_halves(block + 2 + 4 * (part % 4));
    p.codes = chunk_detail::minus(word >> (4 * (part / 4)) & 0x0f0f0f0fu, 8);
    p.second_codes = 0;
    p.d = half_to_float(load_u16(block));
    p.dmin = 0.0f;
  } else if constexpr (F::kFormat == Format::kQ2_0) {
    // Weights 4 part .. 4 part + 3 of the chunk are group 2 (chunk % 2) + part / 4 of the block's
    // four groups of 16 codes, bytes 4 (part % 4) .. + 3 (weight_chunks.h's FormatQ2_0).
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk / 2) * 18;
    const uint32_t word = load_u32_from_halves(block + 2 + 4 * (part % 4));
    const int group = 2 * int(chunk % 2) + part / 4;
    p.codes = chunk_detail::minus(word >> (2 * group) & 0x03030303u, 1);
    p.second_codes = 0;
    p.d = half_to_float(load_u16(block));
    p.dmin = 0.0f;
  } else if constexpr (F::kFormat == Format::kQ8_0) {
    const uint8_t* block = data + size_t(row) * row_bytes + size_t(chunk) * 34;
    p.codes = load_u32_from_halves(block + 2 + 4 * part);
    p.second_codes = 0;
    p.d = half_to_float(load_u16(block));
    p.dmin = 0.0f;
  } else {
    const IntChunk c = F::load(data, row, row_bytes, chunk);
    p.codes = chunk_word(c, part);
    p.second_codes = 0;
    p.d = c.d;
    p.dmin = c.dmin;
  }
  return p;
}

// The block's activations for a tile, column by column: Q8_0 / Q8_1 as their quants, then the
// chunks' d, then (Q8_1) s; float formats as their 16- or 32-bit values.
template <class F>
constexpr int kActivationBytesOf = kFloatFormat<F>
                                       ? kChunkWeights*(F::kActivation == Format::kF32 ? 4 : 2)
                                       : kChunkWeights + (F::kActivation == Format::kQ8_1 ? 8 : 4);

template <class F>
__device__ __forceinline__ void stage_activations(uint8_t* tile, const ActivationRows& x,
                                                  const int64_t* stored, int n_cols, int64_t chunk0,
                                                  int64_t n_chunks) {
  constexpr size_t kColumnBytes = size_t(kTileChunksOf<F>) * kActivationBytesOf<F>;
  constexpr size_t kValueBytes = kFloatFormat<F> ? kActivationBytesOf<F> : kChunkWeights;
  const int64_t row_chunks = x.n_in / kChunkWeights;
  for (int c = 0; c < n_cols; ++c) {
    uint8_t* column = tile + c * kColumnBytes;
    const uint8_t* values = static_cast<const uint8_t*>(x.values) +
                            (stored[c] * row_chunks + chunk0) * int64_t(kValueBytes);
    copy_units<uint4>(column, 0, values, 0, 1, size_t(n_chunks) * kValueBytes);
    if constexpr (!kFloatFormat<F>) {
      float* d = reinterpret_cast<float*>(column + kTileChunksOf<F> * kChunkWeights);
      for (int64_t b = threadIdx.x; b < n_chunks; b += blockDim.x) {
        copy_async<4>(&d[b], &x.d[stored[c] * row_chunks + chunk0 + b]);
        if constexpr (F::kActivation == Format::kQ8_1)
          copy_async<4>(&d[kTileChunksOf<F> + b], &x.s[stored[c] * row_chunks + chunk0 + b]);
      }
    }
  }
}

// Value i of a float format's activations staged in shared memory (F32, F16 or BF16).
template <class F>
__device__ __forceinline__ float staged_float_activation(const uint8_t* column, int i) {
  if constexpr (F::kActivation == Format::kF32) {
    return reinterpret_cast<const float*>(column)[i];
  } else if constexpr (F::kActivation == Format::kF16) {
    return half_to_float(reinterpret_cast<const uint16_t*>(column)[i]);
  } else {
    return bf16_to_float(reinterpret_cast<const uint16_t*>(column)[i]);
  }
}

// A row's result from its parts' chained sums, in the lanes first_lane .. first_lane + kParts - 1
// of the warp, added as the CPU's kernel adds its lanes. Every lane of the warp calls it
// (shuffles).
template <class F>
__device__ __forceinline__ float sum_of_parts(float chained, int first_lane) {
  if constexpr (kGroupedQ4_0<F>) {
    float s[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) s[j] = __shfl_sync(0xffffffffu, chained, first_lane + j);
    return exact_add(exact_add(s[0], s[1]), exact_add(s[2], s[3]));
  } else {
    float s[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      s[j] = __shfl_sync(0xffffffffu, chained, first_lane + j);
      if constexpr (kPartsOf<F> == 16)
        s[j] = exact_add(s[j], __shfl_sync(0xffffffffu, chained, first_lane + j + 8));
    }
    return exact_add(exact_add(exact_add(s[0], s[4]), exact_add(s[2], s[6])),
                     exact_add(exact_add(s[1], s[5]), exact_add(s[3], s[7])));
  }
}

// Block (x, y): kOrderedRowsPerBlock rows of a task (x) against its columns 8y .. 8y + 7.
template <class F>
__global__ void __launch_bounds__(kOrderedWarps * kWarpSize)
    ordered_kernel(const __grid_constant__ MatmulShape shape,
                   const __grid_constant__ TaskTable table) {
  constexpr int kParts = kPartsOf<F>, kChains = kChainsOf<F>, kRows = kOrderedRowsPerBlock<F>;
  constexpr int kTileChunks = kTileChunksOf<F>;
  constexpr size_t kTileRowBytes = size_t(kTileChunks) * kChunkBytesOf<F>;
  constexpr size_t kColumnBytes = size_t(kTileChunks) * kActivationBytesOf<F>;
  __shared__ __align__(16) uint8_t tile[kRows * kTileRowBytes];
  __shared__ __align__(16) uint8_t x_tile[kOrderedCols * kColumnBytes];
  const int t = task_of_block(table, blockIdx.x);
  const MatmulTask& task = table.task[t];
  const uint8_t* const weights = weights_of(shape, task);
  const int64_t col0 = int64_t(blockIdx.y) * kOrderedCols;
  if (col0 >= task.n_cols) return;  // the whole block: before any barrier
  const int lane = threadIdx.x % kWarpSize, part = lane % kParts;
  const int64_t row0 = (int64_t(blockIdx.x) - table.first_block[t]) * kRows;
  const int local_row = threadIdx.x / kParts;
  const int64_t row = row0 + local_row;
  const int64_t n_rows = task.n_out - row0 < kRows ? task.n_out - row0 : kRows;
  // Rows past the end compute zeros: every lane takes part in the barriers and shuffles below.
  const bool active = row < task.n_out;
  const int64_t n_chunks = shape.n_in / kChunkWeights;
  const int n_cols = task.n_cols - col0 < kOrderedCols ? int(task.n_cols - col0) : kOrderedCols;
  int64_t stored[kOrderedCols];
#pragma unroll
  for (int c = 0; c < kOrderedCols; ++c)
    stored[c] = c < n_cols ? stored_row(shape.x, task.x_first + col0 + c) : 0;
  float acc[kOrderedCols][kChains], minimum[kOrderedCols];
#pragma unroll
  for (int c = 0; c < kOrderedCols; ++c) {
    minimum[c] = 0.0f;
#pragma unroll
    for (int k = 0; k < kChains; ++k) acc[c][k] = 0.0f;
  }
  for (int64_t chunk0 = 0; chunk0 < n_chunks; chunk0 += kTileChunks) {
    const int64_t tile_chunks = n_chunks - chunk0 < kTileChunks ? n_chunks - chunk0 : kTileChunks;
    __syncthreads();  // the previous tile is read
    stage_rows<F>(tile, weights, shape.row_bytes, row0, n_rows, chunk0, tile_chunks);
    stage_activations<F>(x_tile, shape.x, stored, n_cols, chunk0, tile_chunks);
    wait_for_async_copies();
    __syncthreads();
    if (!active) continue;
    if constexpr (kFloatFormat<F>) {
#pragma unroll 4
      for (int i = part; i < int(tile_chunks) * kChunkWeights; i += kParts) {
        const float w = F::value(tile, local_row, kTileRowBytes, i);
#pragma unroll
        for (int c = 0; c < kOrderedCols; ++c) {
          if (c >= n_cols) continue;
          acc[c][0] = fmaf(w, staged_float_activation<F>(x_tile + c * kColumnBytes, i), acc[c][0]);
        }
      }
    } else {
#pragma unroll 4
      for (int b = 0; b < int(tile_chunks); ++b) {
        const int64_t chunk = chunk0 + b;
        const PartCodes w = load_part<F>(tile, local_row, kTileRowBytes, b, part);
#pragma unroll
        for (int c = 0; c < kOrderedCols; ++c) {
          if (c >= n_cols) continue;
          const uint8_t* column = x_tile + c * kColumnBytes;
          const uint32_t* quants = reinterpret_cast<const uint32_t*>(column) + b * 8;
          const float* scales =
              reinterpret_cast<const float*>(column + kTileChunks * kChunkWeights);
          const float scale = exact_mul(w.d, scales[b]);
          int32_t sum = dot4(w.codes, quants[part], 0);
          if constexpr (kGroupedQ4_0<F>) sum = dot4(w.second_codes, quants[part + 4], sum);
          const float products = float(sum);
          if (kChains == 2 && (chunk & 1)) {
            acc[c][kChains - 1] = fmaf(scale, products, acc[c][kChains - 1]);
          } else {
            acc[c][0] = fmaf(scale, products, acc[c][0]);
          }
          if constexpr (F::kActivation == Format::kQ8_1)
            minimum[c] = exact_add(minimum[c], exact_mul(w.dmin, scales[kTileChunks + b]));
        }
      }
    }
  }
  const int first_lane = lane / kParts * kParts;
#pragma unroll
  for (int c = 0; c < kOrderedCols; ++c) {
    if (c >= n_cols) break;
    const float chained = kChains == 2 ? exact_add(acc[c][0], acc[c][kChains - 1]) : acc[c][0];
    const float sum = sum_of_parts<F>(chained, first_lane);
    if (active && part == 0) finish(task, row, col0 + c, exact_add(sum, minimum[c]));
  }
}

// Decode's ordered products of the integer formats (one column): ordered_kernel's float
// operations, in two steps per tile of chunks. First every (row, chunk) of the tile is an item of
// its own: a thread loads its weights and activations and leaves the parts' integer dot products
// and the chunk's scale in shared memory. Then a thread per (row, part) runs that part's chains
// over the tile's chunks in order, one multiply-add a chunk. ordered_kernel gives each thread a
// (row, part) from the start, and decode's few rows then keep a few warps on each SM, every one
// waiting on its loads and decoding alone (Nsight Compute: 6-23 % achieved occupancy, no warp
// eligible in 85-90 % of cycles).
constexpr int kDecodeThreads = 256;
constexpr int kDecodeTileChunks = 64;
// One warp of chain threads, so that blocks are small and many: the rows of a row group, or 4.
template <class F>
constexpr int kDecodeRowsOf{kWarpSize / kPartsOf<F>};

template <class F>
__global__ void __launch_bounds__(kDecodeThreads)
    ordered_decode_kernel(const __grid_constant__ MatmulShape shape,
                          const __grid_constant__ TaskTable table) {
  constexpr int kParts = kPartsOf<F>, kChains = kChainsOf<F>, kRows = kDecodeRowsOf<F>;
  constexpr int kItems = kRows * kDecodeTileChunks;
  static_assert(kItems % kDecodeThreads == 0);
  // One padding chunk a row: the rows a warp's chain threads read start in different banks.
  constexpr int kStride = kDecodeTileChunks + 1;
  constexpr bool kMinimum = F::kActivation == Format::kQ8_1;
  __shared__ int32_t products[kRows * kStride * kParts];
  __shared__ float scales[kRows * kStride];
  __shared__ float minimums[kMinimum ? kRows * kStride : 1];
  const int t = task_of_block(table, blockIdx.x);
  const MatmulTask& task = table.task[t];
  const uint8_t* const weights = weights_of(shape, task);
  const int64_t row0 = (int64_t(blockIdx.x) - table.first_block[t]) * kRows;
  const int64_t n_chunks = shape.n_in / kChunkWeights;
  const int64_t x_row = stored_row(shape.x, task.x_first);
  const int8_t* x_values = static_cast<const int8_t*>(shape.x.values) + x_row * shape.x.n_in;
  const int64_t x_chunk0 = x_row * n_chunks;
  const int chain_row = int(threadIdx.x) / kParts, part = int(threadIdx.x) % kParts;
  float acc[kChains], minimum = 0.0f;
#pragma unroll
  for (int k = 0; k < kChains; ++k) acc[k] = 0.0f;
  for (int64_t chunk0 = 0; chunk0 < n_chunks; chunk0 += kDecodeTileChunks) {
    const int tile_chunks =
        int(n_chunks - chunk0 < kDecodeTileChunks ? n_chunks - chunk0 : kDecodeTileChunks);
    __syncthreads();  // the previous tile's items are read
                      // Unrolled: a thread's items load at once.
#pragma unroll
    for (int i = threadIdx.x; i < kItems; i += kDecodeThreads) {
      // Neighbouring threads read neighbouring bytes: the 8 rows of a group, or a row's chunks.
      const int r =
          kGroupedQ4_0<F> ? i % 8 + i / (8 * kDecodeTileChunks) * 8 : i / kDecodeTileChunks;
      const int b = kGroupedQ4_0<F> ? i / 8 % kDecodeTileChunks : i % kDecodeTileChunks;
      if (b >= tile_chunks || row0 + r >= task.n_out) continue;
      const int64_t chunk = chunk0 + b;
      const IntChunk w = F::load(weights, row0 + r, shape.row_bytes, chunk);
      const auto* quants = reinterpret_cast<const uint32_t*>(x_values + chunk * kChunkWeights);
      int32_t* out = products + (r * kStride + b) * kParts;
#pragma unroll
      for (int p = 0; p < kParts; ++p) {
        const int32_t low = dot4(w.q[p], quants[p], 0);
        out[p] = kGroupedQ4_0<F> ? dot4(w.q[p + 4], quants[p + 4], low) : low;
      }
      scales[r * kStride + b] = exact_mul(w.d, shape.x.d[x_chunk0 + chunk]);
      if constexpr (kMinimum)
        minimums[r * kStride + b] = exact_mul(w.dmin, shape.x.s[x_chunk0 + chunk]);
    }
    __syncthreads();
    if (threadIdx.x >= kWarpSize) continue;
    for (int b = 0; b < tile_chunks; ++b) {
      const float scale = scales[chain_row * kStride + b];
      const float product = float(products[(chain_row * kStride + b) * kParts + part]);
      if (kChains == 2 && ((chunk0 + b) & 1)) {
        acc[kChains - 1] = fmaf(scale, product, acc[kChains - 1]);
      } else {
        acc[0] = fmaf(scale, product, acc[0]);
      }
      if constexpr (kMinimum) minimum = exact_add(minimum, minimums[chain_row * kStride + b]);
    }
  }
  if (threadIdx.x >= kWarpSize) return;  // a whole warp: the shuffles below have all lanes
  const float chained = kChains == 2 ? exact_add(acc[0], acc[kChains - 1]) : acc[0];
  const float sum = sum_of_parts<F>(chained, int(threadIdx.x) % kWarpSize / kParts * kParts);
  const int64_t row = row0 + chain_row;
  if (row < task.n_out && part == 0) finish(task, row, 0, exact_add(sum, minimum));
}

// Decode's ordered products of the float formats (one column): the 16 parts of a row are 16
// threads, each a chain of multiply-adds over every 16th weight, which cannot be split as the
// integer formats' can. So a block is one warp, two rows, more blocks than ordered_kernel's
// four warps of eight rows (the router's 128 rows are 64 blocks, not 16), and each tile of the
// rows and the activations is copied in at once before the chains run over it.
constexpr int kFloatDecodeTileWeights = 1024;
constexpr int kFloatDecodeRows = kWarpSize / 16;

template <class F>
__global__ void __launch_bounds__(kWarpSize)
    ordered_float_decode_kernel(const __grid_constant__ MatmulShape shape,
                                const __grid_constant__ TaskTable table) {
  constexpr int kParts = kPartsOf<F>, kTile = kFloatDecodeTileWeights;
  static_assert(kFloatDecodeRows * kParts == kWarpSize);
  constexpr int kWeightBytes = kChunkBytesOf<F> / kChunkWeights;
  constexpr int kXBytes = F::kActivation == Format::kF32 ? 4 : 2;
  constexpr size_t kTileRowBytes = size_t(kTile) * kWeightBytes;
  __shared__ __align__(16) uint8_t tile[kFloatDecodeRows * kTileRowBytes];
  __shared__ __align__(16) uint8_t x_tile[kTile * kXBytes];
  const int t = task_of_block(table, blockIdx.x);
  const MatmulTask& task = table.task[t];
  const uint8_t* const weights = weights_of(shape, task);
  const int64_t row0 = (int64_t(blockIdx.x) - table.first_block[t]) * kFloatDecodeRows;
  const int local_row = int(threadIdx.x) / kParts, part = int(threadIdx.x) % kParts;
  const int64_t row = row0 + local_row;
  const bool active = row < task.n_out;
  const int n_rows =
      int(task.n_out - row0 < kFloatDecodeRows ? task.n_out - row0 : kFloatDecodeRows);
  const uint8_t* x_values = static_cast<const uint8_t*>(shape.x.values) +
                            stored_row(shape.x, task.x_first) * shape.x.n_in * kXBytes;
  float acc = 0.0f;
  for (int64_t i0 = 0; i0 < shape.n_in; i0 += kTile) {
    const int n = int(shape.n_in - i0 < kTile ? shape.n_in - i0 : kTile);
    __syncthreads();  // the previous tile is read
    copy_to_shared(tile, kTileRowBytes,
                   weights + size_t(row0) * shape.row_bytes + i0 * kWeightBytes, shape.row_bytes,
                   n_rows, size_t(n) * kWeightBytes);
    copy_to_shared(x_tile, 0, x_values + i0 * kXBytes, 0, 1, size_t(n) * kXBytes);
    wait_for_async_copies();
    __syncthreads();
    if (!active) continue;
    for (int i = part; i < n; i += kParts)
      acc = fmaf(F::value(tile, local_row, kTileRowBytes, i), staged_float_activation<F>(x_tile, i),
                 acc);
  }
  const float sum = sum_of_parts<F>(acc, local_row * kParts);
  if (active && part == 0) finish(task, row, 0, sum);
}

// kOrderedDecode: the CPU's order for one column (ordered_decode_kernel,
// ordered_float_decode_kernel).
enum class Kernel { kMatvec, kGemm, kOrdered, kOrderedDecode };

template <class F>
int64_t blocks_of(const MatmulTask& task, Kernel kernel) {
  switch (kernel) {
    case Kernel::kMatvec:
      return (task.n_out + kMatvecWarps - 1) / kMatvecWarps;
    case Kernel::kGemm:
      return (task.n_out + kTileRows - 1) / kTileRows * ((task.n_cols + kTileCols - 1) / kTileCols);
    case Kernel::kOrdered:
      return (task.n_out + kOrderedRowsPerBlock<F> - 1) / kOrderedRowsPerBlock<F>;
    case Kernel::kOrderedDecode: {
      const int rows = kFloatFormat<F> ? kFloatDecodeRows : kDecodeRowsOf<F>;
      return (task.n_out + rows - 1) / rows;
    }
  }
  return 0;
}

template <class F>
Kernel kernel_for(const MatmulTask& task) {
  if constexpr (kCpuOrder<F>) return task.n_cols == 1 ? Kernel::kOrderedDecode : Kernel::kOrdered;
  return task.n_cols > kMatvecMaxCols ? Kernel::kGemm : Kernel::kMatvec;
}

template <class F>
void launch(Kernel kernel, unsigned blocks, const MatmulShape& shape, const TaskTable& table,
            cudaStream_t stream) {
  if constexpr (kCpuOrder<F>) {
    if (kernel == Kernel::kOrderedDecode) {
      if constexpr (kFloatFormat<F>) {
        ordered_float_decode_kernel<F><<<blocks, kWarpSize, 0, stream>>>(shape, table);
      } else {
        ordered_decode_kernel<F><<<blocks, kDecodeThreads, 0, stream>>>(shape, table);
      }
      return;
    }
    int64_t most_cols = 0;
    for (int t = 0; t < table.n_tasks; ++t) most_cols = std::max(most_cols, table.task[t].n_cols);
    const dim3 grid(blocks, unsigned((most_cols + kOrderedCols - 1) / kOrderedCols));
    ordered_kernel<F><<<grid, kOrderedWarps * kWarpSize, 0, stream>>>(shape, table);
  } else if (kernel == Kernel::kGemm) {
    gemm_kernel<F><<<blocks, kGemmThreads, 0, stream>>>(shape, table);
  } else {
    matvec_kernel<F><<<blocks, kMatvecWarps * kWarpSize, 0, stream>>>(shape, table);
  }
}

template <class F>
cudaError_t run_tasks(const MatmulRequest& request, cudaStream_t stream) {
  const MatmulShape shape{request.n_in, request.row_bytes, request.x, request.experts};
  for (const Kernel kernel :
       {Kernel::kMatvec, Kernel::kGemm, Kernel::kOrdered, Kernel::kOrderedDecode}) {
    std::vector<const MatmulTask*> chosen;
    for (const MatmulTask& task : request.tasks)
      if (kernel_for<F>(task) == kernel && task.n_out > 0 && task.n_cols > 0)
        chosen.push_back(&task);
    for (size_t first = 0; first < chosen.size(); first += kTasksPerLaunch) {
      TaskTable table;
      table.n_tasks = int32_t(std::min<size_t>(kTasksPerLaunch, chosen.size() - first));
      table.first_block[0] = 0;
      for (int t = 0; t < table.n_tasks; ++t) {
        table.task[t] = *chosen[first + size_t(t)];
        table.first_block[t + 1] = table.first_block[t] + blocks_of<F>(table.task[t], kernel);
      }
      launch<F>(kernel, unsigned(table.first_block[table.n_tasks]), shape, table, stream);
      const cudaError_t launched = cudaGetLastError();
      if (launched != cudaSuccess) return launched;
    }
  }
  return cudaSuccess;
}

template <class F>
__global__ void dequantize_rows_kernel(const uint8_t* w, size_t row_bytes, int64_t n_in,
                                       const int32_t* rows, float* out) {
  const int64_t row = rows[blockIdx.x];
  float* y = out + int64_t(blockIdx.x) * n_in;
  for (int64_t chunk = threadIdx.x; chunk < n_in / kChunkWeights; chunk += blockDim.x) {
    const auto c = F::load(w, row, row_bytes, chunk);
    for (int i = 0; i < kChunkWeights; ++i) {
      if constexpr (kFloatFormat<F>) {
        y[chunk * kChunkWeights + i] = c.v[i];
      } else {
        y[chunk * kChunkWeights + i] = chunk_value<F>(c, i);
      }
    }
  }
}

// Calls fn(F{}) with F the format struct of `format` (Q4_0Grouped where rows are grouped).
template <class Fn>
cudaError_t with_format(Format format, bool grouped_rows, Fn&& fn) {
  switch (format) {
    case Format::kF32:
      return fn(FormatF32{});
    case Format::kF16:
      return fn(FormatF16{});
    case Format::kBF16:
      return fn(FormatBF16{});
    case Format::kQ8_0:
      return fn(FormatQ8_0{});
    case Format::kQ4_0:
      return grouped_rows ? fn(FormatQ4_0Grouped{}) : fn(FormatQ4_0{});
    case Format::kQ4_1:
      return fn(FormatQ4_1{});
    case Format::kQ5_0:
      return fn(FormatQ5_0{});
    case Format::kQ5_1:
      return fn(FormatQ5_1{});
    case Format::kIQ4_NL:
      return fn(FormatIQ4_NL{});
    case Format::kQ2_0:
      return fn(FormatQ2_0{});
    case Format::kIQ4_XS:
      return fn(FormatIQ4_XS{});
    case Format::kQ2_K:
      return fn(FormatQ2_K{});
    case Format::kQ3_K:
      return fn(FormatQ3_K{});
    case Format::kQ4_K:
      return fn(FormatQ4_K{});
    case Format::kQ5_K:
      return fn(FormatQ5_K{});
    case Format::kQ6_K:
      return fn(FormatQ6_K{});
    case Format::kQ8_1:
    case Format::kQ8_K:
      break;  // activation formats only
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_matmul(const MatmulRequest& request, cudaStream_t stream) {
  return with_format(request.format, request.grouped_rows,
                     [&](auto format) { return run_tasks<decltype(format)>(request, stream); });
}

cudaError_t launch_dequantize_rows(Format format, const uint8_t* w, size_t row_bytes, int64_t n_in,
                                   const int32_t* rows, int64_t n_rows, float* out,
                                   cudaStream_t stream) {
  if (n_rows == 0) return cudaSuccess;
  return with_format(format, false, [&](auto f) {
    dequantize_rows_kernel<decltype(f)>
        <<<unsigned(n_rows), 128, 0, stream>>>(w, row_bytes, n_in, rows, out);
    return cudaGetLastError();
  });
}

}  // namespace strata::cuda
