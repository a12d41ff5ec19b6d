#include "model/tensor_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/progress.h"

namespace strata {
namespace {

// Reads [begin, begin + length) where the range may end in the file's last, partial
// alignment block: O_DIRECT can only read whole blocks, so that tail (under one block) is
// read through a plain descriptor.
Status read_range(FileReader& reader, uint8_t* destination, uint64_t begin, uint64_t length) {
  const uint64_t alignment = reader.alignment();
  const uint64_t whole = length / alignment * alignment;
  if (whole > 0) STRATA_RETURN_IF_ERROR(reader.read(destination, begin, whole));
  if (whole == length) return Status();
  const int fd = ::open(reader.path().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::errorf("{}: cannot open: {}", reader.path(), std::strerror(errno));
  const ssize_t got = ::pread(fd, destination + whole, length - whole, off_t(begin + whole));
  const int error = errno;
  ::close(fd);
  if (got != ssize_t(length - whole))
    return Status::errorf("{}: read of {} bytes at offset {}: {}", reader.path(), length - whole,
                          begin + whole, got < 0 ? std::strerror(error) : "short read");
  return Status();
}

}  // namespace

bool is_routed_expert_tensor(const gguf::TensorInfo& tensor) { return tensor.shape.size() == 3; }

uint64_t dense_tensor_bytes(const gguf::GgufFile& file) {
  uint64_t bytes = 0;
  for (const auto& tensor : file.tensors())
    if (!is_routed_expert_tensor(tensor)) bytes += tensor.n_bytes;
  return bytes;
}

void LoadedTensorData::Free::operator()(uint8_t* p) const { std::free(p); }

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
    const uint64_t end = (tensor.offset + tensor.n_bytes + alignment - 1) / alignment * alignment;
    pieces.push_back({&tensor, begin, std::min(end, file.file_size()) - begin, total});
    total += end - begin;
  }
  auto loaded = std::unique_ptr<LoadedTensorData>(new LoadedTensorData());
  void* memory = nullptr;
  if (total > 0 && posix_memalign(&memory, std::max<size_t>(alignment, 64), total) != 0)
    return Status::errorf("{}: cannot allocate {} bytes for the dense weights", file.name(), total);
  loaded->memory_.reset(static_cast<uint8_t*>(memory));
  loaded->bytes_ = total;
  for (const Piece& piece : pieces) {
    uint8_t* slot = loaded->memory_.get() + piece.slot;
    const Status status = read_range(reader, slot, piece.file_begin, piece.length);
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
