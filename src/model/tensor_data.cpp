#include "model/tensor_data.h"

#include <algorithm>
#include <vector>

#include "base/populate_mapping.h"
#include "base/progress.h"
#include "cpu/thread_pool.h"
#include "quant/q4_0_groups.h"

namespace strata {

namespace {

constexpr uint64_t kLoadChunkBytes = uint64_t(64) << 20;  // a multiple of any reader alignment
constexpr int kLoadThreads = 4;

}  // namespace

bool is_routed_expert_tensor(const gguf::TensorInfo& tensor) { return tensor.shape.size() == 3; }

uint64_t dense_tensor_bytes(const gguf::GgufFile& file) {
  uint64_t bytes = 0;
  for (const auto& tensor : file.tensors())
    if (!is_routed_expert_tensor(tensor)) bytes += tensor.n_bytes;
  return bytes;
}

bool grouped_when_copied(const gguf::TensorInfo& tensor) {
  return tensor.shape.size() >= 2 && tensor.name != "token_embd.weight" &&
         groups_rows(QuantType(tensor.type_id), tensor.shape[1]);
}

bool has_tensors_grouped_when_copied(const gguf::GgufFile& file) {
  for (const auto& tensor : file.tensors())
    if (grouped_when_copied(tensor)) return true;
  return false;
}

Result<std::unique_ptr<LoadedTensorData>> LoadedTensorData::load(const gguf::GgufFile& file,
                                                                 FileReader& reader,
                                                                 Contents contents,
                                                                 ProgressBar* progress) {
  // Each tensor is read as the aligned range that covers it, into a slot of its own; the
  // widening costs at most two alignment units per tensor.
  const uint64_t alignment = reader.alignment();
  struct Piece {
    const gguf::TensorInfo* tensor;
    uint64_t file_begin, length, slot;
  };
  std::vector<Piece> pieces;
  uint64_t total = 0;
  for (const auto& tensor : file.tensors()) {
    if (contents == Contents::kDense && is_routed_expert_tensor(tensor)) continue;
    const uint64_t begin = tensor.offset / alignment * alignment;
    // The reader fills what lies past the end of the file (up to the next alignment unit)
    // with zeros, so the tensor that ends the file needs no special case.
    const uint64_t end = (tensor.offset + tensor.n_bytes + alignment - 1) / alignment * alignment;
    pieces.push_back({&tensor, begin, end - begin, total});
    total += end - begin;
  }
  auto loaded = std::unique_ptr<LoadedTensorData>(new LoadedTensorData());
  if (total > 0) {
    // On huge pages, as the mapped path's page cache is: these are the weights every token
    // streams (attention, routers, shared experts, the output matrix, resident experts).
    loaded->memory_ = allocate_on_huge_pages(total, alignment);
    if (!loaded->memory_)
      return Status::errorf("{}: cannot allocate {} bytes for the weights", file.name(), total);
  }
  loaded->bytes_ = total;

  // Read in chunks by a few threads at once: while one thread's pages are faulted in (the kernel
  // zeroes each before the read lands in it), the others' reads keep the disk busy, and a few
  // reads in flight is what disks read fastest with. The resident 30B-A3B shape (16 GiB) loaded
  // in 19 s read piece by piece on one thread.
  struct Chunk {
    size_t piece;
    uint64_t offset, length;  // within the piece
  };
  std::vector<Chunk> chunks;
  for (size_t p = 0; p < pieces.size(); ++p)
    for (uint64_t offset = 0; offset < pieces[p].length; offset += kLoadChunkBytes)
      chunks.push_back({p, offset, std::min(kLoadChunkBytes, pieces[p].length - offset)});
  std::vector<Status> failures(chunks.size());
  ThreadPool pool(kLoadThreads);
  pool.parallel_for(int64_t(chunks.size()), [&](int64_t c, int) {
    const Chunk& chunk = chunks[size_t(c)];
    const Piece& piece = pieces[chunk.piece];
    failures[size_t(c)] = reader.read(loaded->memory_.get() + piece.slot + chunk.offset,
                              piece.file_begin + chunk.offset, chunk.length);
    if (progress) progress->advance(chunk.length);
  });
  for (size_t c = 0; c < chunks.size(); ++c)
    if (!failures[c].ok())
      return failures[c].with_prefix(
          fmt::format("loading tensor {}", pieces[chunks[c].piece].tensor->name));

  std::vector<uint8_t*> starts(pieces.size());
  for (size_t p = 0; p < pieces.size(); ++p)
    starts[p] =
        loaded->memory_.get() + pieces[p].slot + (pieces[p].tensor->offset - pieces[p].file_begin);
  pool.parallel_for(int64_t(pieces.size()), [&](int64_t p, int) {
    const gguf::TensorInfo& tensor = *pieces[size_t(p)].tensor;
    // An expert stack [n_expert][rows][n_in] groups as n_expert * rows rows: rows is a
    // multiple of the group, so no group straddles two experts.
    if (grouped_when_copied(tensor))
      group_q4_0_rows(starts[size_t(p)], tensor.shape[0], tensor.n_elements() / tensor.shape[0]);
  });
  for (size_t p = 0; p < pieces.size(); ++p) loaded->tensors_[pieces[p].tensor->name] = starts[p];
  return loaded;
}

const uint8_t* LoadedTensorData::data(const gguf::TensorInfo& tensor) const {
  const auto found = tensors_.find(tensor.name);
  return found == tensors_.end() ? nullptr : found->second;
}

Result<std::shared_ptr<const TensorData>> load_resident_tensor_data(const gguf::GgufFile& file,
                                                                    ProgressBar* progress) {
  if (!has_tensors_grouped_when_copied(file)) {
    populate_mapping(file.bytes(), progress);
    return std::shared_ptr<const TensorData>(std::make_shared<MappedTensorData>(file));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<FileReader> reader, open_file_reader(file.name()));
  STRATA_ASSIGN_OR_RETURN(
      auto loaded,
      LoadedTensorData::load(file, *reader, LoadedTensorData::Contents::kAll, progress));
  return std::shared_ptr<const TensorData>(std::move(loaded));
}

}  // namespace strata
