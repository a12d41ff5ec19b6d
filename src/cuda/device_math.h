// The few primitives the CUDA kernels' format code is written in, for the device and, with the
// same results, for the host: the format decoders (weight_chunks.h, activation_chunks.h) compile
// in both, so that the host tests (CI has no GPU) check them against quant/'s references.
#pragma once

#include <cmath>
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
  for (int i = 0; i < 4; ++i)
    result |= uint32_t(bytes >> (8 * ((selector >> (4 * i)) & 7)) & 0xff) << (8 * i);
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

// e^x as the CPU's C library computes it (glibc's expf, ARM's optimized routine, as its FMA
// build for x86-64 fuses it): 2^(k/32) from a table and a cubic, in double. The CPU's softmax,
// SiLU and sigmoid use it; the GPU's own expf differs from it in the last bit now and then, which
// can move an 8-bit activation quant downstream.
STRATA_HD float exact_expf(float x) {
  // 2^(i/32) as doubles, less i << 47 (what the exponent part of k adds back).
  static constexpr uint64_t kTable[32] = {
      0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
      0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
      0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
      0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
      0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
      0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
      0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
      0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540};
  constexpr double kInvLn2Scaled = 0x1.71547652b82fep+0 * 32;
  constexpr double kShift = 0x1.8p+52;
  constexpr double kC0 = 0x1.c6af84b912394p-5 / 32 / 32 / 32;
  constexpr double kC1 = 0x1.ebfce50fac4f3p-3 / 32 / 32;
  constexpr double kC2 = 0x1.62e42ff0c52d6p-1 / 32;
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (((bits >> 20) & 0x7ff) >= 0x42b) {  // |x| >= 88, or NaN
    if (bits == 0xff800000u) return 0.0f;
    if (((bits >> 20) & 0x7ff) >= 0x7f8) return x + x;
    if (x > 0x1.62e42ep6f) return INFINITY;
    if (x < -0x1.9fe368p6f) return 0.0f;
  }
  const double z = kInvLn2Scaled * double(x);
  double kd = z + kShift;
  uint64_t ki;
  std::memcpy(&ki, &kd, 8);
  kd -= kShift;
  const double r = fma(kInvLn2Scaled, double(x), -kd);  // the FMA build fuses z - kd
  const uint64_t t = kTable[ki % 32] + (ki << 47);
  double scale;
  std::memcpy(&scale, &t, 8);
  const double cubic = fma(kC0, r, kC1);
  const double y = fma(cubic, r * r, fma(kC2, r, 1.0));
  return float(y * scale);
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
STRATA_HD uint16_t load_u16(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }
STRATA_HD uint32_t load_u32_from_halves(const uint8_t* p) {
  return uint32_t(load_u16(p)) | uint32_t(load_u16(p + 2)) << 16;
}
STRATA_HD uint32_t load_u32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

}  // namespace strata::cuda
