// Device and pinned host allocations that free themselves, and the one way CUDA failures become
// a Status: "cuda: <operation>: <CUDA's message>".
#pragma once

#include <cuda_runtime_api.h>
#include <strata/status.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata::cuda {

// OK for cudaSuccess.
Status cuda_status(cudaError_t error, std::string_view operation);

// The most device memory held in DeviceBuffers at once since the process started, over every
// device (weights, KV cache, scratch, the expert arena: every allocation Strata makes; not the
// CUDA context's own, nor what graphs reserve).
uint64_t peak_device_bytes_held();

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();

  // `what` names the allocation in the error ("the KV cache").
  static Result<DeviceBuffer> allocate(size_t bytes, std::string_view what);

  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }

 private:
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locked host memory: copies from the device into it run asynchronously.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  ~PinnedBuffer();

  static Result<PinnedBuffer> allocate(size_t bytes, std::string_view what);

  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }

 private:
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace strata::cuda
