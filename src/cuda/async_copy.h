// Copies from global to shared memory that do not wait for their data (cp.async, compute
// capability 8.0 and later): a thread issues all of its share of a tile before any of it
// arrives, where a load and a store to shared memory would wait for each load in turn (the
// compiler cannot move loads ahead of stores through pointers that may alias). On the host (the
// emulator) they are plain copies.
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::cuda {

// Starts copying `kBytes` (4, 8 or 16; both addresses aligned to it) from global `src` to shared
// `dst`. The data is there after wait_for_async_copies() by the same thread.
template <int kBytes>
__device__ __forceinline__ void copy_async(void* dst, const void* src) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto shared = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
  if constexpr (kBytes == 16) {
    // .cg: through L2 only; weights are read once.
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared), "l"(src));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(shared), "l"(src),
                 "n"(kBytes));
  }
#else
  std::memcpy(dst, src, kBytes);
#endif
}

// Waits for this thread's copy_async()s; a __syncthreads() after it makes every thread's copies
// visible to the block.
__device__ __forceinline__ void wait_for_async_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

}  // namespace strata::cuda
