#include "experts/host_tier_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/check.h"

namespace strata {

Result<std::unique_ptr<HostTierReader>> HostTierReader::create(const ExpertLayout& layout,
                                                               std::string path,
                                                               uint64_t file_size) {
  auto reader = std::unique_ptr<HostTierReader>(new HostTierReader());
  reader->path_ = std::move(path);
  reader->file_size_ = file_size;
  for (int layer = 0; layer < layout.n_layer(); ++layer) {
    const LayerExpertLayout& l = layout.layers[size_t(layer)];
    const bool one_range = l.contiguous_unit_span(kAlignment) > 0;
    for (int32_t e = 0; e < layout.n_expert; ++e) {
      const std::array<const ExpertTensorLayout*, 3> slices = {&l.gate, &l.up, &l.down};
      for (const ExpertTensorLayout* s : slices) {
        STRATA_CHECK_EQ(s->resident.size(), size_t(layout.n_expert));
        const uint8_t* host = s->resident[size_t(e)];
        reader->first_ = reader->first_ ? std::min(reader->first_, host) : host;
        reader->last_ = std::max(reader->last_, host + s->expert_bytes);
      }
      const uint64_t begin = l.gate.file_offsets[size_t(e)];
      if (!one_range) {
        for (const ExpertTensorLayout* s : slices)
          reader->slices_[s->file_offsets[size_t(e)]] = {s->resident[size_t(e)], s->expert_bytes};
        continue;
      }
      const uint8_t* base = l.gate.resident[size_t(e)];
      for (const ExpertTensorLayout* s : slices)
        if (s->resident[size_t(e)] - base != ptrdiff_t(s->file_offsets[size_t(e)] - begin))
          return Status::errorf(
              "{}: layer {} expert {}: its slices are not in host memory as in the file, so "
              "they cannot be copied as one range",
              reader->path_, layer, e);
      const uint64_t end = l.down.file_offsets[size_t(e)] + l.down.expert_bytes;
      reader->slices_[begin] = {base, size_t(end - begin)};
    }
  }
  return reader;
}

Status HostTierReader::read(void* destination, uint64_t offset, size_t length) {
  STRATA_CHECK(memory_ != nullptr);
  // The slice (or unit) the arena widened into [offset, offset + length): it starts in the first
  // 256 bytes and ends in the last, or at the end of the file.
  for (auto it = slices_.lower_bound(offset);
       it != slices_.end() && it->first < offset + kAlignment; ++it) {
    const uint64_t end = it->first + it->second.bytes;
    if (end > offset + length || (end + kAlignment <= offset + length && end != file_size_))
      continue;
    return memory_
        ->write_from_host(static_cast<uint8_t*>(destination) + (it->first - offset),
                          it->second.host, it->second.bytes, CopySource::kHeld)
        .with_prefix(
            fmt::format("{}: copy of {} bytes at offset {}", path_, it->second.bytes, it->first));
  }
  return read_error(path_, offset, length, "not an expert's bytes in the host tier");
}

}  // namespace strata
