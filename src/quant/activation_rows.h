// The two implementations behind quantize_row_q8_0, quantize_row_q8_1 and quantize_row_f16,
// which convert activations before every matrix product: the scalar reference (the
// specification, in q8_0.cpp, q8_1.cpp, f16.cpp) and AVX2 versions (q8_0_avx2.cpp,
// q8_1_avx2.cpp, f16_avx2.cpp), which the public functions call when simd_level() is kAvx2 and
// which write the same bytes for every input without NaNs (legacy_quantize_test.cpp). The AVX2
// versions are llama.cpp's x86 instruction sequences; the scalar ones are 5-20 times slower.
// Internal to quant/.
#pragma once

#include <cstdint>

namespace strata::activation_rows {

void quantize_q8_0_scalar(const float* in, void* blocks, int64_t n);
void quantize_q8_1_scalar(const float* in, void* blocks, int64_t n);
void convert_f16_scalar(const float* in, void* halves, int64_t n);

// REQUIRES: simd_level() == SimdLevel::kAvx2.
void quantize_q8_0_avx2(const float* in, void* blocks, int64_t n);
void quantize_q8_1_avx2(const float* in, void* blocks, int64_t n);
void convert_f16_avx2(const float* in, void* halves, int64_t n);

}  // namespace strata::activation_rows
