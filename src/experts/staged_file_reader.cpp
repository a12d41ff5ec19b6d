#include "experts/staged_file_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "base/check.h"

namespace strata {
namespace {

uint64_t round_up(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }

}  // namespace

size_t StagedFileReader::staging_bytes_for(const FileReader& file, const ExpertLayout& layout) {
  const size_t file_alignment = std::max<size_t>(file.alignment(), 1);
  return size_t(
      round_up(layout.largest_unit_read(kAlignment) + kAlignment + 2 * file_alignment, 4096));
}

StagedFileReader::StagedFileReader(std::shared_ptr<FileReader> file, const ExpertLayout& layout,
                                   ToComputeOrder to_compute_order, uint64_t host_arena_bytes)
    : file_(std::move(file)),
      to_compute_order_(std::move(to_compute_order)),
      file_alignment_(std::max<size_t>(file_->alignment(), 1)),
      staging_bytes_(staging_bytes_for(*file_, layout)) {
  for (const LayerExpertLayout& l : layout.layers)
    for (const ExpertTensorLayout* tensor : std::array{&l.gate, &l.up, &l.down}) {
      if (!tensor->grouped_after_read() && !tensor->ungrouped_after_read()) continue;
      for (const uint64_t offset : tensor->file_offsets) reordered_slices_[offset] = tensor;
    }
  if (host_arena_bytes >= staging_bytes_)
    host_arena_ = std::make_unique<HostExpertCache>(host_arena_bytes, staging_bytes_);
}

StagedFileReader::~StagedFileReader() {
  for (uint8_t* buffer : all_staging_) std::free(buffer);
}

bool StagedFileReader::staging_pinned() const {
  const std::lock_guard lock(mutex_);
  return pinned_;
}

HostExpertCache::Counters StagedFileReader::host_arena_counters() const {
  return host_arena_ ? host_arena_->counters() : HostExpertCache::Counters{};
}

Status StagedFileReader::write_into(ExpertSlotMemory& memory, int n_readers) {
  memory_ = &memory;
  if (host_arena_) {
    if (!host_arena_->block())
      return Status::errorf("{}: cannot allocate the host arena's {} bytes", path(),
                            host_arena_->block_bytes());
    pinned_ = memory.pin_source(host_arena_->block(), host_arena_->block_bytes());
  }
  for (int i = 0; i < n_readers; ++i) {
    uint8_t* buffer = new_staging();
    if (!buffer)
      return Status::errorf("{}: cannot allocate {} staging buffers of {} bytes", path(), n_readers,
                            staging_bytes_);
    return_staging(buffer);
  }
  return Status();
}

// Page-locked by the slots' memory where it can be: copies from pageable memory go through the
// driver's own staging, at a fraction of the bus's speed.
uint8_t* StagedFileReader::new_staging() {
  auto* buffer = static_cast<uint8_t*>(std::aligned_alloc(4096, staging_bytes_));
  if (!buffer) return nullptr;
  const bool pinned = memory_->pin_source(buffer, staging_bytes_);
  const std::lock_guard lock(mutex_);
  all_staging_.push_back(buffer);
  pinned_ = pinned_ && pinned;
  return buffer;
}

uint8_t* StagedFileReader::take_staging() {
  {
    const std::lock_guard lock(mutex_);
    if (!idle_staging_.empty()) {
      uint8_t* buffer = idle_staging_.back();
      idle_staging_.pop_back();
      return buffer;
    }
  }
  return new_staging();  // one more thread reads at once
}

void StagedFileReader::return_staging(uint8_t* buffer) {
  const std::lock_guard lock(mutex_);
  idle_staging_.push_back(buffer);
}

Status StagedFileReader::read_in_compute_order(uint8_t* buffer, uint64_t offset, size_t length) {
  const uint64_t begin = offset / file_alignment_ * file_alignment_;
  const uint64_t end = round_up(offset + length, file_alignment_);
  if (end - begin > staging_bytes_)
    return read_error(path(), offset, length,
                      fmt::format("larger than the {}-byte staging buffer", staging_bytes_));
  STRATA_RETURN_IF_ERROR(file_->read(buffer, begin, size_t(end - begin)));
  // The read's slices, and no neighbour that starts in its widening and ends past it: the
  // buffer may end before that one does.
  for (auto it = reordered_slices_.lower_bound(offset);
       it != reordered_slices_.end() && it->first < offset + length; ++it)
    if (it->first + it->second->expert_bytes <= offset + length)
      to_compute_order_(buffer + (it->first - begin), *it->second);
  return Status();
}

Status StagedFileReader::copy_into_slot(void* destination, const uint8_t* bytes, uint64_t offset,
                                        size_t length) {
  const Status copied =
      memory_->write_from_host(static_cast<uint8_t*>(destination), bytes + offset % file_alignment_,
                               length, CopySource::kReusedAfterReturn);
  if (copied.ok()) return copied;
  return copied.with_prefix(
      fmt::format("{}: copy of {} bytes at offset {}", path(), length, offset));
}

Status StagedFileReader::read_through_staging(void* destination, uint64_t offset, size_t length) {
  uint8_t* staging = take_staging();
  if (!staging) return read_error(path(), offset, length, "cannot allocate a staging buffer");
  Status status = read_in_compute_order(staging, offset, length);
  if (status.ok()) status = copy_into_slot(destination, staging, offset, length);
  return_staging(staging);
  return status;
}

Status StagedFileReader::read(void* destination, uint64_t offset, size_t length) {
  STRATA_CHECK(memory_ != nullptr);
  if (offset % kAlignment != 0 || length % kAlignment != 0)
    return read_error(path(), offset, length, fmt::format("not aligned to {} bytes", kAlignment));
  const HostExpertCache::Lease lease =
      host_arena_ ? host_arena_->acquire(offset, length) : HostExpertCache::Lease{};
  if (!lease.bytes) return read_through_staging(destination, offset, length);
  Status status = lease.hit ? Status() : read_in_compute_order(lease.bytes, offset, length);
  if (status.ok()) status = copy_into_slot(destination, lease.bytes, offset, length);
  host_arena_->release(lease, status.ok());
  return status;
}

}  // namespace strata
