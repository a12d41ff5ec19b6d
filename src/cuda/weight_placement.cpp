#include "cuda/weight_placement.h"

#include <cuda_runtime.h>

#include "base/check.h"

namespace strata::cuda {
namespace {

constexpr uintptr_t kKeptAlignment = 256;  // cudaMalloc's own

}  // namespace

const std::pair<const uintptr_t, WeightPlacement::Copy>* WeightPlacement::find(
    uintptr_t address) const {
  auto after = copies_.upper_bound(address);
  if (after == copies_.begin()) return nullptr;
  const auto& candidate = *std::prev(after);
  return address < candidate.first + candidate.second.bytes ? &candidate : nullptr;
}

Status WeightPlacement::place(const void* host, size_t bytes) {
  if (bytes == 0) return Status();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(host), end = begin + bytes;
  if (const auto* holder = find(begin); holder && end <= holder->first + holder->second.bytes)
    return Status();  // tied weights: the output matrix is the embedding
  const auto next = copies_.lower_bound(begin);
  if (find(begin) || (next != copies_.end() && next->first < end))
    return Status::errorf("cuda: weights at {:#x}-{:#x} overlap weights placed before", begin, end);
  STRATA_ASSIGN_OR_RETURN(DeviceBuffer memory,
                          DeviceBuffer::allocate(bytes + kKeptAlignment, "the weights"));
  const uint8_t* device = memory.data() + begin % kKeptAlignment;
  STRATA_RETURN_IF_ERROR(
      cuda_status(cudaMemcpy(const_cast<uint8_t*>(device), host, bytes, cudaMemcpyHostToDevice),
                  "copying the weights to the device"));
  bytes_ += bytes;
  copies_.emplace(begin, Copy{bytes, std::move(memory), device});
  return Status();
}

void WeightPlacement::compute_in_place(const uint8_t* device, size_t bytes) {
  copies_.emplace(reinterpret_cast<uintptr_t>(device), Copy{bytes, DeviceBuffer(), device});
}

const uint8_t* WeightPlacement::resolve(const void* host) const {
  const uintptr_t address = reinterpret_cast<uintptr_t>(host);
  const auto* holder = find(address);
  STRATA_CHECK(holder != nullptr);
  return holder->second.device + (address - holder->first);
}

}  // namespace strata::cuda
