#include "cuda/device_slot_memory.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "base/check.h"

namespace strata::cuda {
namespace {

constexpr size_t kDeviceAlignment = 256;  // cudaMalloc's

size_t round_up(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace

Result<std::unique_ptr<DeviceSlotMemory>> DeviceSlotMemory::create(
    std::span<const SlotClassShape> classes, size_t alignment, int device,
    cudaStream_t compute_stream) {
  auto memory = std::unique_ptr<DeviceSlotMemory>(new DeviceSlotMemory());
  memory->device_ = device;
  memory->compute_stream_ = compute_stream;
  const size_t slot_alignment = std::max(alignment, kDeviceAlignment);
  for (const SlotClassShape& shape : classes) {
    SizeClass& c = memory->classes_.emplace_back();
    c.stride = round_up(shape.slot_bytes, slot_alignment);
    c.n_slots = shape.n_slots;
    const size_t bytes = c.stride * size_t(shape.n_slots);
    // An alignment above the allocation's own is met by starting the slots further in.
    STRATA_ASSIGN_OR_RETURN(
        c.memory,
        DeviceBuffer::allocate(bytes + slot_alignment - kDeviceAlignment, "the expert arena"));
    c.first = reinterpret_cast<uint8_t*>(round_up(uintptr_t(c.memory.data()), slot_alignment));
    memory->bytes_ += c.memory.bytes();
    c.released.resize(size_t(shape.n_slots), nullptr);
    for (cudaEvent_t& event : c.released)
      STRATA_RETURN_IF_ERROR(cuda_status(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                                         "creating the expert arena's events"));
  }
  return memory;
}

DeviceSlotMemory::~DeviceSlotMemory() {
  for (cudaStream_t stream : all_streams_) cudaStreamDestroy(stream);
  for (SizeClass& c : classes_)
    for (cudaEvent_t event : c.released)
      if (event) cudaEventDestroy(event);
  for (void* host : pinned_) cudaHostUnregister(host);
}

uint8_t* DeviceSlotMemory::slot_start(int size_class, int slot) const {
  const SizeClass& c = classes_[size_t(size_class)];
  STRATA_CHECK(slot >= 0 && slot < c.n_slots);
  return c.first + size_t(slot) * c.stride;
}

std::pair<int, int> DeviceSlotMemory::slot_of(const uint8_t* address) const {
  for (size_t i = 0; i < classes_.size(); ++i) {
    const SizeClass& c = classes_[i];
    if (address >= c.first && address < c.first + c.stride * size_t(c.n_slots))
      return {int(i), int(size_t(address - c.first) / c.stride)};
  }
  STRATA_CHECK(false);  // reads target slots only
  return {-1, -1};
}

std::vector<DeviceSlotMemory::Block> DeviceSlotMemory::blocks() const {
  std::vector<Block> blocks;
  for (const SizeClass& c : classes_) blocks.push_back({c.memory.data(), c.memory.bytes()});
  return blocks;
}

cudaStream_t DeviceSlotMemory::take_stream() {
  std::lock_guard lock(mutex_);
  if (!idle_streams_.empty()) {
    cudaStream_t stream = idle_streams_.back();
    idle_streams_.pop_back();
    return stream;
  }
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return nullptr;
  all_streams_.push_back(stream);
  return stream;
}

void DeviceSlotMemory::return_stream(cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  idle_streams_.push_back(stream);
}

Status DeviceSlotMemory::write_from_host(uint8_t* destination, const void* source, size_t bytes) {
  const auto [size_class, slot] = slot_of(destination);
  // The current device is the thread's: an I/O thread starts on device 0.
  STRATA_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device_), "selecting the device to copy to"));
  cudaStream_t stream = take_stream();
  if (!stream) return cuda_status(cudaGetLastError(), "creating a stream for expert copies");
  cudaError_t error =
      cudaStreamWaitEvent(stream, classes_[size_t(size_class)].released[size_t(slot)], 0);
  if (error == cudaSuccess)
    error = cudaMemcpyAsync(destination, source, bytes, cudaMemcpyHostToDevice, stream);
  if (error == cudaSuccess) error = cudaStreamSynchronize(stream);
  return_stream(stream);
  return cuda_status(error, "copying an expert to the device");
}

void DeviceSlotMemory::released(int size_class, int slot) {
  // A failed record leaves the event as it was: the next copy then waits for less than it
  // should only if the device has failed already, which the backend reports.
  cudaEventRecord(classes_[size_t(size_class)].released[size_t(slot)], compute_stream_);
}

bool DeviceSlotMemory::pin_source(const void* host, size_t bytes) {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t begin = uintptr_t(host) / kPage * kPage;
  const uintptr_t end = round_up(uintptr_t(host) + bytes, kPage);
  void* start = reinterpret_cast<void*>(begin);
  // Writable memory first (a copy of the file); a read-only mapping of it needs the flag.
  for (const unsigned flags : {cudaHostRegisterDefault, cudaHostRegisterReadOnly}) {
    if (cudaHostRegister(start, end - begin, flags) == cudaSuccess) {
      pinned_.push_back(start);
      return true;
    }
    cudaGetLastError();
  }
  return false;
}

}  // namespace strata::cuda
