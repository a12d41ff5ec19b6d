// The CPU backend's kernels per tensor format: for each QuantType the fastest activation
// quantizer, dot product and many-rows dot product this CPU runs, chosen once per process from
// base/cpu_features.h (AVX-512 VNNI, else AVX2, else the scalar reference; STRATA_SIMD=avx2 or
// =scalar restricts the choice). The formats themselves, and the reference functions every
// kernel here is tested against, are quant/'s (quant_type.h).
//
// A new format plugs in with one file in quant/ (block struct, reference functions, a row of
// quant_traits.cpp) and, in each backend, its kernels plus a row of that backend's table:
// here kSimdKernels in format_kernels.cpp, its kernels in <format>_avx2.cpp / _avx512.cpp
// declared in simd_kernels.h. A format without a row computes with its reference functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/quant_type.h"

namespace strata {

// Dot products of `n_rows` weight rows (n weights each, w_stride bytes apart) with one
// activation row x converted to the format's vec_dot_type: out[r] = sum_i w_r[i] * x[i].
// Bit-identical to calling the format's VecDotFn per row with n_cols = 1; faster on short rows.
using VecDotRowsFn = void (*)(int64_t n, const void* w, size_t w_stride, int n_rows, const void* x,
                              float* out);

struct FormatKernels {
  // Floats into the format, the same bytes as its reference quantize_row.
  QuantizeRowFn quantize_row = nullptr;
  // nullptr for the activation-only formats (Q8_1, Q8_K), as their vec_dot_reference.
  VecDotFn vec_dot = nullptr;
  // nullptr where this CPU has none: call vec_dot per row.
  VecDotRowsFn vec_dot_rows = nullptr;
};

// REQUIRES: `type` is a QuantType enumerator. Thread-safe.
const FormatKernels& format_kernels(QuantType type);

}  // namespace strata
