// The few primitives the CUDA kernels' format code is written in, for the device and, with the
// same results, for the host: the format decoders (weight_chunks.h, activation_chunks.h) compile
// in both, so that the host tests (CI has no GPU) check them against quant/'s references.
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define STRATA_HD __host__ __device__ __forceinline__
#else
#define STRATA_HD inline
#endif

namespace strata::cuda {

// c + the dot product of the four signed bytes of a and b (the dp4a instruction).
STRATA_HD int32_t dot4(uint32_t a, uint32_t b, int32_t c) {
#ifdef __CUDA_ARCH__
  return __dp4a(int(a), int(b), c);
#else
  for (int i = 0; i < 4; ++i) c += int32_t(int8_t(a >> (8 * i))) * int32_t(int8_t(b >> (8 * i)));
  return c;
#endif
}

// Result byte i is byte (selector >> 4i) & 7 of the eight bytes {x (bytes 0-3), y (4-7)}: the
// byte_perm instruction without its sign-replicating mode. REQUIRES: selector & 0x8888 == 0.
STRATA_HD uint32_t byte_perm(uint32_t x, uint32_t y, uint32_t selector) {
#ifdef __CUDA_ARCH__
  return __byte_perm(x, y, selector);
#else
  const uint64_t bytes = uint64_t(x) | uint64_t(y) << 32;
  uint32_t result = 0;
  for (int i = 0; i < 4; ++i) result |= uint32_t(bytes >> (8 * ((selector >> (4 * i)) & 7)) & 0xff) << (8 * i);
  return result;
#endif
}

// Float operations that the device compiler may not fuse into FMAs, for code that must repeat a
// reference's rounding (the dequantizers).
STRATA_HD float exact_mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
STRATA_HD float exact_add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
STRATA_HD float exact_sub(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// IEEE half (its bits) to float, exact.
STRATA_HD float half_to_float(uint16_t h) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(h));
#else
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int shift = 0;
    while ((mantissa & 0x400) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | (uint32_t(113 - shift) << 23) | ((mantissa & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
#endif
}

STRATA_HD float bf16_to_float(uint16_t b) {
  const uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Unaligned-safe loads of little-endian words from rows whose blocks are 2- or 4-byte aligned.
STRATA_HD uint16_t load_u16(const uint8_t* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}
STRATA_HD uint32_t load_u32_from_halves(const uint8_t* p) {
  return uint32_t(load_u16(p)) | uint32_t(load_u16(p + 2)) << 16;
}
STRATA_HD uint32_t load_u32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

}  // namespace strata::cuda
