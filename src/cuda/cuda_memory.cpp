#include "cuda/cuda_memory.h"

#include <cuda_runtime.h>

#include <atomic>
#include <utility>

namespace strata::cuda {
namespace {

std::atomic<uint64_t> held_bytes{0}, peak_held_bytes{0};

void count_allocation(size_t bytes) {
  const uint64_t now = held_bytes.fetch_add(bytes) + bytes;
  uint64_t peak = peak_held_bytes.load();
  while (now > peak && !peak_held_bytes.compare_exchange_weak(peak, now)) {
  }
}

// cudaFree, and the bytes no longer held.
void free_device(uint8_t* data, size_t bytes) {
  if (!data) return;
  cudaFree(data);
  held_bytes.fetch_sub(bytes);
}

}  // namespace

uint64_t peak_device_bytes_held() { return peak_held_bytes.load(); }

Status cuda_status(cudaError_t error, std::string_view operation) {
  if (error == cudaSuccess) return Status();
  return Status::errorf("cuda: {}: {}", operation, cudaGetErrorString(error));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    free_device(data_, bytes_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { free_device(data_, bytes_); }

Result<DeviceBuffer> DeviceBuffer::allocate(size_t bytes, std::string_view what) {
  DeviceBuffer buffer;
  if (bytes == 0) return buffer;
  void* data = nullptr;
  const cudaError_t error = cudaMalloc(&data, bytes);
  if (error != cudaSuccess) {
    cudaGetLastError();  // an allocation failure is not sticky; clear it
    return Status::errorf("cuda: cannot allocate {} bytes of device memory for {}: {}", bytes, what,
                          cudaGetErrorString(error));
  }
  buffer.data_ = static_cast<uint8_t*>(data);
  buffer.bytes_ = bytes;
  count_allocation(bytes);
  return buffer;
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_) cudaFreeHost(data_);
}

Result<PinnedBuffer> PinnedBuffer::allocate(size_t bytes, std::string_view what) {
  PinnedBuffer buffer;
  if (bytes == 0) return buffer;
  void* data = nullptr;
  const cudaError_t error = cudaMallocHost(&data, bytes);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return Status::errorf("cuda: cannot allocate {} bytes of pinned host memory for {}: {}", bytes,
                          what, cudaGetErrorString(error));
  }
  buffer.data_ = static_cast<uint8_t*>(data);
  buffer.bytes_ = bytes;
  return buffer;
}

}  // namespace strata::cuda
