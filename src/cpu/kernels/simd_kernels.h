// The x86 SIMD kernels of the tensor formats, one file each (q4_0_avx2.cpp, q4_0_avx512.cpp,
// ...). *_avx2 functions REQUIRE AVX2, FMA, F16C and BMI2; *_avx512 ones AVX-512 F, BW, VL and
// VNNI besides. The engine reaches them through format_kernels(), which picks what this CPU runs
// from the rows below; this header is for that table, the kernels' tests and the
// micro-benchmarks.
//
// What they compute is the format's reference function (quant/quant_type.h: quantize_row,
// vec_dot_reference; a VecDotRowsFn, format_kernels.h, is vec_dot with rows and columns swapped):
//  * quantize_row_*_avx2 write the reference quantizer's bytes for every finite input (Q8_0,
//    Q8_1, F16: every input but NaNs);
//  * vec_dot_*_avx2 are within a float rounding bound of the exact dot product of the decoded
//    values, as the reference is (they add in another order), and a column's bits do not depend
//    on the other columns of the call;
//  * vec_dot_rows_*_avx2 give each row the bits of vec_dot_*_avx2 with one column;
//  * every *_avx512 kernel gives the bits of the AVX2 kernel of the same kind.
#pragma once

#include <type_traits>

#include "cpu/kernels/format_kernels.h"

namespace strata {

using QuantizeRowKernel = std::remove_pointer_t<QuantizeRowFn>;
using VecDotKernel = std::remove_pointer_t<VecDotFn>;
using VecDotRowsKernel = std::remove_pointer_t<VecDotRowsFn>;

// Activation formats: what matrix products convert their float inputs to (llama.cpp's x86
// instruction sequences).
QuantizeRowKernel quantize_row_f16_avx2, quantize_row_q8_0_avx2, quantize_row_q8_1_avx2,
    quantize_row_q8_k_avx2;

// Float formats (dense_avx2.h).
VecDotKernel vec_dot_f32_avx2, vec_dot_f16_avx2, vec_dot_bf16_avx2;

// 32-weight block formats (block32_avx2.h, block32_avx512.h).
VecDotKernel vec_dot_q8_0_avx2, vec_dot_q4_0_avx2, vec_dot_q4_1_avx2, vec_dot_q5_0_avx2,
    vec_dot_q5_1_avx2, vec_dot_iq4_nl_avx2;
VecDotRowsKernel vec_dot_rows_q8_0_avx2, vec_dot_rows_q4_0_avx2, vec_dot_rows_q4_1_avx2,
    vec_dot_rows_q5_0_avx2, vec_dot_rows_q5_1_avx2, vec_dot_rows_iq4_nl_avx2;
VecDotRowsKernel vec_dot_rows_q8_0_avx512, vec_dot_rows_q4_0_avx512;

// Q2_0's 64-weight blocks, two Q8_0 activation blocks each (q2_0_avx2.cpp, q2_0_avx512.cpp).
VecDotKernel vec_dot_q2_0_avx2;
VecDotRowsKernel vec_dot_rows_q2_0_avx2, vec_dot_rows_q2_0_avx512;

// 256-weight super-block formats (k_quant_avx2.h, k_quant_type1_avx512.h,
// k_quant_quarters_avx512.h).
VecDotKernel vec_dot_q2_k_avx2, vec_dot_q3_k_avx2, vec_dot_q4_k_avx2, vec_dot_q5_k_avx2,
    vec_dot_q6_k_avx2, vec_dot_iq4_xs_avx2;
VecDotKernel vec_dot_q2_k_avx512, vec_dot_q4_k_avx512, vec_dot_q5_k_avx512, vec_dot_q6_k_avx512;

// A format's row of the table format_kernels() chooses from; nullptr where it has no kernel of
// that kind.
struct SimdKernels {
  QuantType type;
  QuantizeRowFn quantize_avx2 = nullptr;
  VecDotFn dot_avx2 = nullptr;
  VecDotRowsFn dot_rows_avx2 = nullptr;
  VecDotFn dot_avx512 = nullptr;
  VecDotRowsFn dot_rows_avx512 = nullptr;
};

// The row of `type`; nullptr for a format without SIMD kernels.
const SimdKernels* find_simd_kernels(QuantType type);

}  // namespace strata
