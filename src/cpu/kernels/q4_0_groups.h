// Q4_0 in row groups: a load-time rearrangement of a Q4_0 matrix for decode's mat-vec on AVX-512.
//
// In a GGUF file a Q4_0 matrix is row after row of 18-byte blocks. Grouped, every 8 rows form a
// group of the same size, written block index by block index: for block b, the 8 rows' fp16
// scales (16 bytes), then the 8 rows' 16 quant bytes (128 bytes). One vector load then holds the
// quants of 4 rows, one conversion their 8 scales, and one FMA accumulates 4 rows, where the
// GGUF layout needs a broadcast, a conversion and an FMA per row. On a 2-core Xeon the
// mat-vec computed only ~1.2x as fast as memory delivers weights (docs/speed.md), so fewer
// uops per byte is decode speed: 1.50x the pair kernel in L2, 1.04x from DRAM
// (bench/rows_kernel_ab_bench), 99.8 -> 85.3 ms a token on the resident 30B-A3B shape.
//
// The arithmetic per (row, column) differs from the GGUF-layout kernels (4 partial sums per row
// instead of 8), so a matrix is grouped everywhere or nowhere: decode and prefill both run
// vec_dot_q4_0_groups_avx512, whose float operations per output do not depend on how many
// columns a call computes (bit-identical logits whatever the batch).
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/quant_type.h"

namespace strata {

inline constexpr int kQ4_0GroupRows = 8;
inline constexpr size_t kQ4_0GroupBlockBytes = kQ4_0GroupRows * 18;  // scales, then quants

// Whether a matrix of this type and row count can be in row groups, on any CPU: Q4_0, rows a
// multiple of 8. Files repacked with --grouped store such matrices grouped (model/tensor_data.h).
bool has_row_groups(QuantType type, int64_t n_rows);

// Whether matrices of this type and row count are grouped on this CPU: has_row_groups, and the
// AVX-512 VNNI kernel available (STRATA_SIMD=avx2 turns it off, like every AVX-512 kernel).
// Whoever copies weights into memory applies it; weights used in place (a memory-mapped file)
// stay in the file's layout.
bool groups_rows(QuantType type, int64_t n_rows);

// Rearranges n_rows (a multiple of 8) Q4_0 rows of n weights into row groups, in place. The
// bytes keep their size; only their order changes. Fast with AVX-512 (F, BW, VL), which decode
// uses on expert units just read; portable without it (a file writer on any CPU).
void group_q4_0_rows(uint8_t* rows, int64_t n, int64_t n_rows);
// The way back: n_rows grouped rows into the GGUF layout, in place. Portable.
void ungroup_q4_0_rows(uint8_t* rows, int64_t n, int64_t n_rows);
// group_q4_0_rows's AVX-512 form. REQUIRES: AVX-512 F, BW and VL.
void group_q4_0_rows_avx512(uint8_t* rows, int64_t n, int64_t n_rows);

// Row `row` of grouped Q4_0 rows, as floats: the reference the kernel is tested against.
void dequantize_grouped_q4_0_row(const uint8_t* rows, int64_t n, int64_t row, float* out);

// Rows [0, 8 * n_groups) of grouped Q4_0 weights (w: the first group) against n_cols Q8_0
// activation rows (column c at x + c * x_stride bytes): out[c * out_stride + r]. Needs AVX-512
// (F, BW, VL) and VNNI. Each output's float operations are the same for any n_cols.
void vec_dot_q4_0_groups_avx512(int64_t n, const void* w, int n_groups, const void* x,
                                size_t x_stride, int n_cols, float* out, size_t out_stride);

}  // namespace strata
