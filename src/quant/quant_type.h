// Tensor formats Strata computes with: the enum (values are ggml's type ids, so a GGUF type id
// converts directly, and ids from 1000 on are Strata's own) and one traits row per format
// (quant_traits.cpp). Each format lives in its own file (q4_0.h/.cpp) holding the block struct,
// field by field, and the format's reference functions: the scalar dequantizer (the specification),
// a quantizer, and the dot product with activations in its vec_dot_type, whose numbers every
// backend kernel reproduces within its rounding bound. Nothing here is SIMD or backend code: the
// CPU kernels and their table are in cpu/kernels/ (format_kernels.h says how a new format plugs in
// there).
#pragma once

#include <strata/status.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace strata {

enum class QuantType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
  // Strata's own formats, above ggml's ids (q2_0.h).
  kQ2_0 = 1000,
};

// Converts `n` weights (a multiple of block_size) from blocks to floats.
using DequantizeRowFn = void (*)(const void* blocks, float* out, int64_t n);
// Converts `n` floats (a multiple of block_size) to blocks.
using QuantizeRowFn = void (*)(const float* in, void* blocks, int64_t n);
// Dot products of one weight row `w` (n weights) with `n_cols` activation rows, each already
// converted to the format's vec_dot_type; column c starts at x + c * x_stride bytes:
//   out[c] = sum_i w[i] * x_c[i]      for c in [0, n_cols)
// Kernels decode each weight block once per group of columns (this is what makes prefill a
// GEMM and not a loop of mat-vecs). REQUIRES: n % block_size == 0, n_cols >= 1.
using VecDotFn = void (*)(int64_t n, const void* w, const void* x, size_t x_stride, int n_cols,
                          float* out);

struct QuantTraits {
  QuantType type;
  std::string_view name;
  int64_t block_size;      // weights per block
  size_t block_bytes;      // bytes per block
  QuantType vec_dot_type;  // what activations are converted to before dot products
  DequantizeRowFn dequantize_row;
  QuantizeRowFn quantize_row;
  VecDotFn vec_dot_reference;  // nullptr for activation-only formats (Q8_1, Q8_K)

  size_t row_bytes(int64_t n) const { return size_t(n / block_size) * block_bytes; }
};

// Every format's row, in no particular order.
std::span<const QuantTraits> all_quant_traits();
// The row of a format Strata supports; nullptr for any other ggml type id.
const QuantTraits* find_quant_traits(uint32_t ggml_type_id);
// REQUIRES: `type` is a QuantType enumerator.
const QuantTraits& quant_traits(QuantType type);
// Parses "q4_0", "Q4_K", "f16", ... (case-insensitive).
Result<QuantType> parse_quant_type(std::string_view name);

}  // namespace strata
