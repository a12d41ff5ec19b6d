// Reading GGUF v3 files (and v2, which differs only in nothing we rely on).
//
// Layout (all little-endian):
//   uint32 magic "GGUF" | uint32 version | uint64 n_tensors | uint64 n_kv
//   n_kv x { string key | uint32 value_type | value }
//       string = uint64 length + bytes (not NUL-terminated)
//       array  = uint32 element_type | uint64 count | count x element
//   n_tensors x { string name | uint32 n_dims | n_dims x uint64 ne (innermost first)
//                 | uint32 ggml_type | uint64 offset (relative to the data section) }
//   padding to `general.alignment` (default 32) | data section (each tensor aligned likewise)
//
// Validation (every failure is one line "<file>: <problem>"): magic, version 2 or 3, every
// length checked against the bytes left before anything is allocated, value types 0..12,
// arrays of arrays refused (ggml refuses them too), no duplicate keys, general.alignment a
// non-zero power of two, tensors with 1..4 dims, no negative dims, element counts that fit
// int64, known type ids, row lengths a multiple of the type's block size, offsets aligned, data
// inside the file, no duplicate names, no two tensors overlapping. Bools decode any non-zero
// byte as true. File-supplied names in messages have control and non-ASCII bytes escaped.
//
// Thread-safety: a GgufFile is immutable after open()/parse(); concurrent reads are safe.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/output_path.h"

namespace strata::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
std::string_view value_type_name(ValueType type);

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // ggml "ne": shape[0] is the row length (innermost)
  uint32_t type_id = 0;        // ggml type id (tensor_types.h)
  uint64_t offset = 0;         // from the start of the file (data section offset added)
  uint64_t n_bytes = 0;
  int64_t n_elements() const;
};

// Bytes of a tensor of `shape` (ggml ne) and ggml type `type_id`, or why no GGUF file may hold
// it: unknown type, not 1..4 dims, a negative dim, a row length that is not a multiple of the
// type's block size, or a size that overflows int64. Errors carry no file name.
Result<uint64_t> tensor_n_bytes(std::span<const int64_t> shape, uint32_t type_id);

class MetadataValue;  // defined in gguf_file.cpp

// Split models (llama.cpp's gguf-split): the model is N files named
// <prefix>-00001-of-0000N.gguf and so on. Each is a GGUF file with the keys split.no (its index
// from 0), split.count and split.tensors.count and the tensors whose data it carries; the first
// also holds all of the model's metadata.
inline constexpr std::string_view kSplitNoKey = "split.no";
inline constexpr std::string_view kSplitCountKey = "split.count";
inline constexpr std::string_view kSplitTensorsKey = "split.tensors.count";

class GgufFile {
 public:
  // Maps the file read-only and parses and validates it. Errors name the file. The first part
  // of a split model opens all its parts as one file: the first part's metadata less the
  // split.* keys (they describe the files, not the model: a copy written from this view is
  // one file), every part's tensors, and bytes() joining the parts as
  // MappedFile::open_parts() places them, tensor offsets included.
  static Result<std::shared_ptr<const GgufFile>> open(const std::string& path);
  // Parses an in-memory image (fuzzing, tests); `name` is used in error messages.
  // The bytes must outlive the returned file.
  static Result<std::shared_ptr<const GgufFile>> parse(std::span<const uint8_t> bytes,
                                                       std::string name);
  ~GgufFile();

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  // Where the data section starts: the end of the tensor infos rounded up to the alignment.
  // Files without tensors (vocab-only files) may end before it, so it can exceed file_size().
  uint64_t data_offset() const { return data_offset_; }
  // The bytes of the model's files: a split model's parts together, without the gaps bytes()
  // has between them.
  uint64_t file_size() const;
  // The whole file image (mapped or in memory); a split model's parts with gaps between them
  // that nothing may read.
  std::span<const uint8_t> bytes() const { return bytes_; }
  // The files behind bytes(): one, at 0, or a split model's parts in order.
  const std::vector<FilePart>& parts() const { return parts_; }

  // Metadata. Typed getters accept any integer width/signedness that fits (llama.cpp's writers
  // are not consistent about u32 vs i32), and f32 or f64 for floats. Errors name the file
  // and the key: "m.gguf: key qwen3moe.block_count: expected an integer, found string".
  bool has(std::string_view key) const;
  std::vector<std::string> keys() const;  // in file order
  Result<ValueType> type_of(std::string_view key) const;
  Result<uint64_t> get_uint(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;
  Result<std::vector<float>> get_float_array(std::string_view key) const;
  // The value exactly as the file stores it (its uint32 value_type, then the value), for
  // copying it into another file unchanged (GgufWriter::copy_metadata).
  Result<std::span<const uint8_t>> raw_value(std::string_view key) const;
  // Human-readable rendering of one value (arrays abbreviated), for `strata inspect`.
  std::string describe(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;  // nullptr if absent
  const uint8_t* tensor_data(const TensorInfo& tensor) const {
    return bytes_.data() + tensor.offset;
  }

 private:
  GgufFile();  // defined where MetadataValue is complete
  friend class Parser;
  Status parse_image(std::span<const uint8_t> bytes, std::string name);
  // The rest of open() for the first part of a model split in `count` files (gguf_split.cpp).
  static Result<std::shared_ptr<const GgufFile>> open_split(const GgufFile& first, uint64_t count);
  // Moves `part`'s metadata here, less the split.* keys.
  void take_metadata_but_split_keys(GgufFile& part);
  const MetadataValue* find_value(std::string_view key) const;
  // The value of `key` if `accepts` it, else an error saying `expected` and what was found.
  Result<const MetadataValue*> lookup(std::string_view key, bool (*accepts)(const MetadataValue&),
                                      std::string_view expected) const;
  Status key_error(std::string_view key, std::string_view problem) const;

  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::span<const uint8_t> bytes_;
  std::vector<FilePart> parts_;
  std::shared_ptr<void> mapping_;  // owns the mmap when opened from a path
  std::vector<std::pair<std::string, std::unique_ptr<MetadataValue>>> metadata_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;  // views of tensors_[i].name
};

// Every file of `model` (each part of a split one) as an input of a command that writes, for
// check_output_path() (base/output_path.h): a model is never replaced by what is made of it.
std::vector<CommandInput> model_inputs(const GgufFile& model, std::string_view what = "the model");

}  // namespace strata::gguf
