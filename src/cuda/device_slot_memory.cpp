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
    const size_t n_slots = size_t(std::max(shape.n_slots, 0));
    c.filled.resize(n_slots, nullptr);
    c.released_by = std::make_unique<std::atomic<int32_t>[]>(n_slots);
    for (size_t slot = 0; slot < n_slots; ++slot) c.released_by[slot] = -1;
    c.copy_pending = std::make_unique<std::atomic<bool>[]>(n_slots);
    for (cudaEvent_t& event : c.filled)
      STRATA_RETURN_IF_ERROR(cuda_status(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                                         "creating the expert arena's events"));
  }
  memory->release_events_.resize(kReleaseEvents, nullptr);
  for (cudaEvent_t& event : memory->release_events_)
    STRATA_RETURN_IF_ERROR(cuda_status(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                                       "creating the expert arena's events"));
  return memory;
}

DeviceSlotMemory::~DeviceSlotMemory() {
  for (cudaStream_t stream : all_streams_) cudaStreamDestroy(stream);
  for (SizeClass& c : classes_)
    for (cudaEvent_t event : c.filled)
      if (event) cudaEventDestroy(event);
  for (cudaEvent_t event : release_events_)
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

Status DeviceSlotMemory::write_from_host(uint8_t* destination, const void* source, size_t bytes,
                                         CopySource source_kind) {
  const auto [size_class, slot] = slot_of(destination);
  SizeClass& c = classes_[size_t(size_class)];
  // The current device is the thread's: an I/O thread starts on device 0.
  STRATA_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device_), "selecting the device to copy to"));
  cudaStream_t stream = take_stream();
  if (!stream) return cuda_status(cudaGetLastError(), "creating a stream for expert copies");
  // After the kernels that read the slot's old unit, and after the slot's earlier writes, which
  // may still run on another stream.
  const int32_t released_by = c.released_by[size_t(slot)].load(std::memory_order_acquire);
  cudaError_t error = released_by < 0
                          ? cudaSuccess
                          : cudaStreamWaitEvent(stream, release_events_[size_t(released_by)], 0);
  if (error == cudaSuccess) error = cudaStreamWaitEvent(stream, c.filled[size_t(slot)], 0);
  if (error == cudaSuccess)
    error = cudaMemcpyAsync(destination, source, bytes, cudaMemcpyHostToDevice, stream);
  if (error == cudaSuccess) error = cudaEventRecord(c.filled[size_t(slot)], stream);
  if (error == cudaSuccess && source_kind == CopySource::kReusedAfterReturn)
    error = cudaStreamSynchronize(stream);
  else if (error == cudaSuccess)
    c.copy_pending[size_t(slot)].store(true, std::memory_order_release);
  return_stream(stream);
  return cuda_status(error, "copying an expert to the device");
}

Status DeviceSlotMemory::claimed(int size_class, int slot) {
  SizeClass& c = classes_[size_t(size_class)];
  if (!c.copy_pending[size_t(slot)].exchange(false, std::memory_order_acq_rel)) return Status();
  return cuda_status(cudaStreamWaitEvent(compute_stream_, c.filled[size_t(slot)], 0),
                     "ordering the computation after the expert's copy");
}

void DeviceSlotMemory::released(int size_class, std::span<const int> slots) {
  const size_t event = next_release_event_;
  next_release_event_ = (next_release_event_ + 1) % release_events_.size();
  // A failed record leaves the event as it was: the next copy then waits for less than it
  // should only if the device has failed already, which the backend reports.
  cudaEventRecord(release_events_[event], compute_stream_);
  SizeClass& c = classes_[size_t(size_class)];
  for (const int slot : slots)
    c.released_by[size_t(slot)].store(int32_t(event), std::memory_order_release);
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
