#include "gguf/gguf_writer.h"

#include <bit>

#include "base/check.h"
#include "base/interrupt.h"

namespace strata::gguf {
namespace {

constexpr uint32_t kVersion = 3;
constexpr size_t kMaxNameBytes = 63;  // ggml's GGML_MAX_NAME (64) holds a NUL as well
// Writes smaller than this are gathered; a 1 MiB buffer turns row-by-row writers into few
// syscalls while tensor-sized writes go straight to the file.
constexpr size_t kBufferBytes = size_t(1) << 20;

uint64_t align_up(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

class Encoder {
 public:
  template <class T>
  Encoder& put(T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  Encoder& put_string(std::string_view text) {
    put<uint64_t>(text.size());
    bytes_.insert(bytes_.end(), text.begin(), text.end());
    return *this;
  }
  Encoder& put_type(ValueType type) { return put<uint32_t>(uint32_t(type)); }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

template <class T>
std::vector<uint8_t> encode_scalar(ValueType type, T value) {
  Encoder encoder;
  encoder.put_type(type).put(value);
  return std::move(encoder.bytes());
}

template <class T>
std::vector<uint8_t> encode_array(ValueType element_type, std::span<const T> values) {
  Encoder encoder;
  encoder.put_type(ValueType::kArray).put_type(element_type).put<uint64_t>(values.size());
  for (const T& value : values) encoder.put(value);
  return std::move(encoder.bytes());
}

}  // namespace

GgufWriter::GgufWriter(std::string path) : path_(std::move(path)) {}

GgufWriter::~GgufWriter() = default;

void GgufWriter::set_value(std::string_view key, std::vector<uint8_t> encoded) {
  STRATA_CHECK(state_ == State::kCollecting);
  // Tensor placement follows alignment_, so only set_alignment() may write this key.
  STRATA_CHECK(key != "general.alignment" ||
               encoded == encode_scalar(ValueType::kUint32, uint32_t(alignment_)));
  for (auto& [name, value] : metadata_) {
    if (name == key) {
      value = std::move(encoded);
      return;
    }
  }
  metadata_.emplace_back(std::string(key), std::move(encoded));
}

void GgufWriter::set_uint8(std::string_view key, uint8_t value) {
  set_value(key, encode_scalar(ValueType::kUint8, value));
}
void GgufWriter::set_int8(std::string_view key, int8_t value) {
  set_value(key, encode_scalar(ValueType::kInt8, value));
}
void GgufWriter::set_uint16(std::string_view key, uint16_t value) {
  set_value(key, encode_scalar(ValueType::kUint16, value));
}
void GgufWriter::set_int16(std::string_view key, int16_t value) {
  set_value(key, encode_scalar(ValueType::kInt16, value));
}
void GgufWriter::set_uint32(std::string_view key, uint32_t value) {
  // ggml reads general.alignment as a uint32 whatever it is; keep our placement in step.
  if (key == "general.alignment") return set_alignment(value);
  set_value(key, encode_scalar(ValueType::kUint32, value));
}
void GgufWriter::set_int32(std::string_view key, int32_t value) {
  set_value(key, encode_scalar(ValueType::kInt32, value));
}
void GgufWriter::set_uint64(std::string_view key, uint64_t value) {
  set_value(key, encode_scalar(ValueType::kUint64, value));
}
void GgufWriter::set_int64(std::string_view key, int64_t value) {
  set_value(key, encode_scalar(ValueType::kInt64, value));
}
void GgufWriter::set_float32(std::string_view key, float value) {
  set_value(key, encode_scalar(ValueType::kFloat32, value));
}
void GgufWriter::set_float64(std::string_view key, double value) {
  set_value(key, encode_scalar(ValueType::kFloat64, value));
}
void GgufWriter::set_bool(std::string_view key, bool value) {
  set_value(key, encode_scalar(ValueType::kBool, uint8_t(value)));
}
void GgufWriter::set_string(std::string_view key, std::string_view value) {
  Encoder encoder;
  encoder.put_type(ValueType::kString).put_string(value);
  set_value(key, std::move(encoder.bytes()));
}

void GgufWriter::set_uint8_array(std::string_view key, std::span<const uint8_t> values) {
  set_value(key, encode_array(ValueType::kUint8, values));
}
void GgufWriter::set_int8_array(std::string_view key, std::span<const int8_t> values) {
  set_value(key, encode_array(ValueType::kInt8, values));
}
void GgufWriter::set_uint16_array(std::string_view key, std::span<const uint16_t> values) {
  set_value(key, encode_array(ValueType::kUint16, values));
}
void GgufWriter::set_int16_array(std::string_view key, std::span<const int16_t> values) {
  set_value(key, encode_array(ValueType::kInt16, values));
}
void GgufWriter::set_uint32_array(std::string_view key, std::span<const uint32_t> values) {
  set_value(key, encode_array(ValueType::kUint32, values));
}
void GgufWriter::set_int32_array(std::string_view key, std::span<const int32_t> values) {
  set_value(key, encode_array(ValueType::kInt32, values));
}
void GgufWriter::set_uint64_array(std::string_view key, std::span<const uint64_t> values) {
  set_value(key, encode_array(ValueType::kUint64, values));
}
void GgufWriter::set_int64_array(std::string_view key, std::span<const int64_t> values) {
  set_value(key, encode_array(ValueType::kInt64, values));
}
void GgufWriter::set_float32_array(std::string_view key, std::span<const float> values) {
  set_value(key, encode_array(ValueType::kFloat32, values));
}
void GgufWriter::set_float64_array(std::string_view key, std::span<const double> values) {
  set_value(key, encode_array(ValueType::kFloat64, values));
}
void GgufWriter::set_bool_array(std::string_view key, std::span<const bool> values) {
  static_assert(sizeof(bool) == 1);
  set_value(key, encode_array(ValueType::kBool, values));
}
void GgufWriter::set_string_array(std::string_view key, std::span<const std::string> values) {
  Encoder encoder;
  encoder.put_type(ValueType::kArray).put_type(ValueType::kString).put<uint64_t>(values.size());
  for (const std::string& value : values) encoder.put_string(value);
  set_value(key, std::move(encoder.bytes()));
}

void GgufWriter::set_alignment(uint32_t alignment) {
  STRATA_CHECK(std::has_single_bit(alignment));
  alignment_ = alignment;
  set_value("general.alignment", encode_scalar(ValueType::kUint32, alignment));
}

Status GgufWriter::copy_metadata(const GgufFile& file, std::string_view key) {
  if (key == "general.alignment") {
    // Rewritten as the uint32 ggml requires, whatever width the source used.
    STRATA_ASSIGN_OR_RETURN(const uint64_t alignment, file.get_uint(key));
    if (alignment > UINT32_MAX) {
      return Status::errorf("{}: general.alignment {} does not fit in uint32", file.name(),
                            alignment);
    }
    set_alignment(uint32_t(alignment));
    return Status();
  }
  STRATA_ASSIGN_OR_RETURN(const std::span<const uint8_t> raw, file.raw_value(key));
  set_value(key, std::vector<uint8_t>(raw.begin(), raw.end()));
  return Status();
}

Result<uint64_t> GgufWriter::add_tensor(std::string name, std::vector<int64_t> shape,
                                        uint32_t type_id) {
  STRATA_CHECK(state_ == State::kCollecting);
  if (name.size() > kMaxNameBytes) {
    return Status::errorf("{}: tensor {}: name longer than ggml's {} bytes", path_, name,
                          kMaxNameBytes);
  }
  for (const PendingTensor& tensor : tensors_) {
    if (tensor.name == name) return Status::errorf("{}: duplicate tensor name {}", path_, name);
  }
  const auto n_bytes = tensor_n_bytes(shape, type_id);
  if (!n_bytes.ok()) return n_bytes.status().with_prefix(fmt::format("{}: tensor {}", path_, name));
  tensors_.push_back({std::move(name), std::move(shape), type_id, n_bytes.value(), 0});
  return n_bytes.value();
}

std::vector<uint8_t> GgufWriter::encode_header() {
  Encoder encoder;
  encoder.put<uint32_t>(0x46554747).put<uint32_t>(kVersion);  // "GGUF"
  encoder.put<uint64_t>(tensors_.size()).put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    encoder.put_string(key);
    encoder.bytes().insert(encoder.bytes().end(), value.begin(), value.end());
  }
  uint64_t offset = 0;
  for (PendingTensor& tensor : tensors_) {
    tensor.offset = offset;
    offset = align_up(offset + tensor.n_bytes, alignment_);
    encoder.put_string(tensor.name).put<uint32_t>(uint32_t(tensor.shape.size()));
    for (const int64_t dim : tensor.shape) encoder.put(dim);
    encoder.put<uint32_t>(tensor.type_id).put<uint64_t>(tensor.offset);
  }
  std::vector<uint8_t> header = std::move(encoder.bytes());
  header.resize(align_up(header.size(), alignment_), 0);
  return header;
}

Status GgufWriter::begin() {
  STRATA_CHECK(state_ == State::kCollecting);
  const std::vector<uint8_t> header = encode_header();
  data_offset_ = header.size();
  Result<AtomicFile> file = AtomicFile::create(path_);
  if (!file.ok()) return fail(file.status());
  file_.emplace(std::move(file).value());
  state_ = State::kWriting;
  buffer_.reserve(kBufferBytes);
  return write_bytes(header);
}

// Moves current_ to the first tensor that still needs bytes (zero-byte tensors need none).
void GgufWriter::advance_past_full_tensors() {
  while (current_ < tensors_.size() && current_filled_ == tensors_[current_].n_bytes) {
    ++current_;
    current_filled_ = 0;
  }
}

Status GgufWriter::write_tensor_data(std::span<const uint8_t> bytes) {
  if (state_ == State::kFailed) return error_;
  STRATA_CHECK(state_ == State::kWriting);
  if (interrupted()) return fail("interrupted");
  if (bytes.empty()) return Status();
  advance_past_full_tensors();
  if (current_ == tensors_.size()) {
    return fail(fmt::format("{} bytes of tensor data after the last tensor", bytes.size()));
  }
  const PendingTensor& tensor = tensors_[current_];
  if (bytes.size() > tensor.n_bytes - current_filled_) {
    return fail(fmt::format("tensor {}: {} bytes written, {} more than its {}", tensor.name,
                            current_filled_ + bytes.size(),
                            current_filled_ + bytes.size() - tensor.n_bytes, tensor.n_bytes));
  }
  if (current_filled_ == 0) {
    STRATA_RETURN_IF_ERROR(write_zeros(data_offset_ + tensor.offset - bytes_written_));
  }
  current_filled_ += bytes.size();
  return write_bytes(bytes);
}

Status GgufWriter::finish() {
  if (state_ == State::kFailed) return error_;
  STRATA_CHECK(state_ == State::kWriting);
  advance_past_full_tensors();
  if (current_ < tensors_.size()) {
    const PendingTensor& tensor = tensors_[current_];
    return fail(fmt::format("tensor {}: {} of its {} bytes written", tensor.name, current_filled_,
                            tensor.n_bytes));
  }
  STRATA_RETURN_IF_ERROR(write_zeros(align_up(bytes_written_, alignment_) - bytes_written_));
  STRATA_RETURN_IF_ERROR(flush());
  if (const Status synced = file_->sync(); !synced.ok()) return fail(synced);
  // A signal during the sync (the longest wait after the last tensor) stops the file here, not
  // after it replaced the user's: a second signal between the rename and the exit would end the
  // process as interrupted with the output already in place.
  if (interrupted()) return fail("interrupted");
  const Status committed = file_->commit();
  file_.reset();
  if (!committed.ok()) return fail(committed);
  state_ = State::kFinished;
  return Status();
}

Status GgufWriter::write_bytes(std::span<const uint8_t> bytes) {
  bytes_written_ += bytes.size();
  if (buffer_.size() + bytes.size() <= kBufferBytes) {
    buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    return Status();
  }
  STRATA_RETURN_IF_ERROR(flush());
  if (bytes.size() < kBufferBytes) {
    buffer_.assign(bytes.begin(), bytes.end());
    return Status();
  }
  return write_unbuffered(bytes);
}

Status GgufWriter::write_zeros(uint64_t n) {
  static constexpr uint8_t kZeros[4096] = {};
  while (n > 0) {
    const uint64_t chunk = std::min<uint64_t>(n, sizeof(kZeros));
    STRATA_RETURN_IF_ERROR(write_bytes({kZeros, chunk}));
    n -= chunk;
  }
  return Status();
}

Status GgufWriter::flush() {
  STRATA_RETURN_IF_ERROR(write_unbuffered(buffer_));
  buffer_.clear();
  return Status();
}

Status GgufWriter::write_unbuffered(std::span<const uint8_t> bytes) {
  if (const Status written = file_->write(bytes); !written.ok()) return fail(written);
  return Status();
}

Status GgufWriter::fail(std::string_view what) {
  return fail(Status::errorf("{}: {}", path_, what));
}

// Records the first error, removes the temporary and makes every later call return the error.
Status GgufWriter::fail(Status error) {
  error_ = std::move(error);
  state_ = State::kFailed;
  file_.reset();
  return error_;
}

}  // namespace strata::gguf
