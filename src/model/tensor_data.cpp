#include "model/tensor_data.h"

#include <vector>

#include "base/progress.h"

namespace strata {

bool is_routed_expert_tensor(const gguf::TensorInfo& tensor) { return tensor.shape.size() == 3; }

uint64_t dense_tensor_bytes(const gguf::GgufFile& file) {
  uint64_t bytes = 0;
  for (const auto& tensor : file.tensors())
    if (!is_routed_expert_tensor(tensor)) bytes += tensor.n_bytes;
  return bytes;
}

Result<std::unique_ptr<LoadedTensorData>> LoadedTensorData::load(const gguf::GgufFile& file,
                                                                 FileReader& reader,
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
    if (is_routed_expert_tensor(tensor)) continue;
    const uint64_t begin = tensor.offset / alignment * alignment;
    // The reader fills what lies past the end of the file (up to the next alignment unit)
    // with zeros, so the tensor that ends the file needs no special case.
    const uint64_t end = (tensor.offset + tensor.n_bytes + alignment - 1) / alignment * alignment;
    pieces.push_back({&tensor, begin, end - begin, total});
    total += end - begin;
  }
  auto loaded = std::unique_ptr<LoadedTensorData>(new LoadedTensorData());
  if (total > 0) {
    // On huge pages, as the resident path's page cache is: these are the weights every token
    // streams (attention, routers, shared experts, the output matrix).
    loaded->memory_ = allocate_on_huge_pages(total, alignment);
    if (!loaded->memory_)
      return Status::errorf("{}: cannot allocate {} bytes for the dense weights", file.name(),
                            total);
  }
  loaded->bytes_ = total;
  for (const Piece& piece : pieces) {
    uint8_t* slot = loaded->memory_.get() + piece.slot;
    const Status status = reader.read(slot, piece.file_begin, piece.length);
    if (!status.ok())
      return status.with_prefix(fmt::format("loading tensor {}", piece.tensor->name));
    loaded->tensors_[piece.tensor->name] = slot + (piece.tensor->offset - piece.file_begin);
    if (progress) progress->advance(piece.tensor->n_bytes);
  }
  return loaded;
}

const uint8_t* LoadedTensorData::data(const gguf::TensorInfo& tensor) const {
  const auto found = tensors_.find(tensor.name);
  return found == tensors_.end() ? nullptr : found->second;
}

}  // namespace strata
