// Force-included into the CUDA backend's sources when they are built for the host
// (scripts/cuda-emulation/run): the kernel syntax they use as plain C++, a block's threads as
// fibers (emu_runtime.cpp). Kernels then run on the CPU with the host's float arithmetic, which
// the GPU's equals where the kernels ask for it (no implicit multiply-adds, -fmad=false; IEEE
// division and square roots; exact_expf): their results are the GPU's, bit for bit, apart from
// what the GPU does concurrently (nothing here: no atomics, a fixed order everywhere).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct emu_uint3 {
  unsigned x, y, z;
};
namespace strata_emu {
const emu_uint3& thread_index();
const emu_uint3& block_index();
const dim3& block_dim();
void launch(dim3 grid, dim3 block, size_t shared_bytes, std::function<void()> body);
void sync_block();
void sync_warp();
void* warp_slots();  // 32 x 8 bytes for the current warp
void* dynamic_shared();
template <class T>
T exchange(T value, int source_lane) {
  static_assert(sizeof(T) <= 8);
  auto* slots = static_cast<unsigned char*>(warp_slots());
  const int lane = int(thread_index().x % 32);
  std::memcpy(slots + 8 * lane, &value, sizeof(T));
  sync_warp();
  T result;
  std::memcpy(&result, slots + 8 * source_lane, sizeof(T));
  sync_warp();
  return result;
}
}  // namespace strata_emu
#define threadIdx (::strata_emu::thread_index())
#define blockIdx (::strata_emu::block_index())
#define blockDim (::strata_emu::block_dim())
inline void __syncthreads() { strata_emu::sync_block(); }
template <class T>
T __shfl_xor_sync(unsigned, T value, int offset) {
  return strata_emu::exchange(value, int(threadIdx.x % 32) ^ offset);
}
template <class T>
T __shfl_sync(unsigned, T value, int source) {
  return strata_emu::exchange(value, source);
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
using std::max;
using std::min;
