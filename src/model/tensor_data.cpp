#include "model/tensor_data.h"

#include <vector>

#include "base/populate_mapping.h"
#include "base/progress.h"
#include "quant/q4_0_groups.h"

namespace strata {

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
      return Status::errorf("{}: cannot allocate {} bytes for the dense weights", file.name(),
                            total);
  }
  loaded->bytes_ = total;
  for (const Piece& piece : pieces) {
    uint8_t* slot = loaded->memory_.get() + piece.slot;
    const Status status = reader.read(slot, piece.file_begin, piece.length);
    if (!status.ok())
      return status.with_prefix(fmt::format("loading tensor {}", piece.tensor->name));
    uint8_t* bytes = slot + (piece.tensor->offset - piece.file_begin);
    // An expert stack [n_expert][rows][n_in] groups as n_expert * rows rows: rows is a
    // multiple of the group, so no group straddles two experts.
    if (grouped_when_copied(*piece.tensor))
      group_q4_0_rows(bytes, piece.tensor->shape[0], piece.tensor->n_elements() / piece.tensor->shape[0]);
    loaded->tensors_[piece.tensor->name] = bytes;
    if (progress) progress->advance(piece.tensor->n_bytes);
  }
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
      auto loaded, LoadedTensorData::load(file, *reader, LoadedTensorData::Contents::kAll, progress));
  return std::shared_ptr<const TensorData>(std::move(loaded));
}

}  // namespace strata
