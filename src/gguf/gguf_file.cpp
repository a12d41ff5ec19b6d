#include "gguf/gguf_file.h"

#include "base/mapped_file.h"
#include "gguf/printable_text.h"
#include "gguf/tensor_types.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <type_traits>
#include <unordered_set>

namespace strata::gguf {

static_assert(std::endian::native == std::endian::little, "GGUF fields are read with memcpy");

// One metadata value, kept as a view of its bytes in the file image: scalars decode on demand,
// and a 151k-entry string array costs nothing until someone asks for it.
class MetadataValue {
 public:
  ValueType type = ValueType::kUint8;
  ValueType element_type = ValueType::kUint8;  // arrays only
  uint64_t count = 0;                          // arrays: number of elements
  std::span<const uint8_t> payload;            // scalar bytes, string bytes, or all array elements
  std::span<const uint8_t> encoded;            // as stored: uint32 value_type, then the value
};

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr int kMaxDims = 4;
// Smallest possible encodings, for refusing counts the remaining bytes cannot hold.
constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;            // empty key, type, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, one dim, type, offset
// Real models have under a hundred keys and a few thousand tensors. The caps bound what a crafted
// file can make the parser allocate (about 100 bytes per entry) to ~100 MiB whatever its size.
constexpr uint64_t kMaxKeys = uint64_t(1) << 20;
constexpr uint64_t kMaxTensors = uint64_t(1) << 20;
constexpr size_t kMaxQuotedBytes = 80;
constexpr uint64_t kDescribeElements = 8;

// Byte size of a scalar type; 0 for string and array, which have variable size.
uint64_t scalar_size(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
      return 8;
    case ValueType::kString:
    case ValueType::kArray:
      return 0;
  }
  return 0;
}

bool is_valid_type(uint32_t raw) { return raw <= uint32_t(ValueType::kFloat64); }

bool is_integer(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool is_float(ValueType type) { return type == ValueType::kFloat32 || type == ValueType::kFloat64; }

template <class T>
T load(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// Every integer type widens losslessly to __int128; callers then check the range they need.
__int128 load_integer(ValueType type, const uint8_t* p) {
  switch (type) {
    case ValueType::kUint8:
      return load<uint8_t>(p);
    case ValueType::kInt8:
      return load<int8_t>(p);
    case ValueType::kUint16:
      return load<uint16_t>(p);
    case ValueType::kInt16:
      return load<int16_t>(p);
    case ValueType::kUint32:
      return load<uint32_t>(p);
    case ValueType::kInt32:
      return load<int32_t>(p);
    case ValueType::kUint64:
      return load<uint64_t>(p);
    case ValueType::kInt64:
      return load<int64_t>(p);
    default:
      return 0;
  }
}

std::string integer_text(__int128 value) {
  return value < 0 ? fmt::format("{}", int64_t(value)) : fmt::format("{}", uint64_t(value));
}

double load_float(ValueType type, const uint8_t* p) {
  return type == ValueType::kFloat32 ? double(load<float>(p)) : load<double>(p);
}

}  // namespace

std::string printable(std::string_view text, bool keep_utf8) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMaxQuotedBytes; ++i) {
    const auto c = uint8_t(text[i]);
    if (c < 0x20 || c == 0x7f || (c > 0x7f && !keep_utf8) || c == '"' || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += char(c);
    }
  }
  if (text.size() > kMaxQuotedBytes) out += fmt::format("...({} bytes)", text.size());
  return out;
}

namespace {

std::string describe_type(const MetadataValue& value) {
  if (value.type != ValueType::kArray) return std::string(value_type_name(value.type));
  return fmt::format("array of {}", value_type_name(value.element_type));
}

// Walks a run of `count` GGUF strings; returns each as a view. Only called on ranges the parser
// already validated.
template <class Fn>
void for_each_string(std::span<const uint8_t> payload, uint64_t count, Fn&& fn) {
  uint64_t pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const auto length = load<uint64_t>(payload.data() + pos);
    fn(std::string_view(reinterpret_cast<const char*>(payload.data() + pos + 8), length));
    pos += 8 + length;
  }
}

std::string describe_element(ValueType type, const uint8_t* p) {
  if (is_integer(type)) return integer_text(load_integer(type, p));
  if (type == ValueType::kFloat32) return fmt::format("{}", load<float>(p));  // shortest float
  if (type == ValueType::kFloat64) return fmt::format("{}", load<double>(p));
  return *p ? "true" : "false";
}

// What a read was for, in error messages: text, or a callable that makes the text, so the
// common path never formats anything.
template <class What>
std::string what_text(const What& what) {
  if constexpr (std::is_invocable_v<What>) {
    return what();
  } else {
    return std::string(what);
  }
}

// Bounds-checked little-endian cursor over the file image.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return bytes_.size() - pos_; }
  const uint8_t* here() const { return bytes_.data() + pos_; }

  template <class What>
  Status need(uint64_t n, const What& what) const {
    if (n <= left()) return Status();
    return Status::errorf("truncated at offset {}: {} needs {} bytes, {} left", pos_,
                          what_text(what), n, left());
  }
  void skip(uint64_t n) { pos_ += n; }

  template <class T, class What>
  Result<T> read(const What& what) {
    STRATA_RETURN_IF_ERROR(need(sizeof(T), what));
    const T value = load<T>(here());
    pos_ += sizeof(T);
    return value;
  }

  template <class What>
  Result<std::string_view> read_string(const What& what) {
    STRATA_ASSIGN_OR_RETURN(const uint64_t length, read<uint64_t>(what));
    if (length > left()) {
      return Status::errorf("truncated at offset {}: {} of {} bytes, {} left", pos_ - 8,
                            what_text(what), length, left());
    }
    const std::string_view text(reinterpret_cast<const char*>(here()), length);
    pos_ += length;
    return text;
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
};

}  // namespace

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
      return "uint8";
    case ValueType::kInt8:
      return "int8";
    case ValueType::kUint16:
      return "uint16";
    case ValueType::kInt16:
      return "int16";
    case ValueType::kUint32:
      return "uint32";
    case ValueType::kInt32:
      return "int32";
    case ValueType::kFloat32:
      return "float32";
    case ValueType::kBool:
      return "bool";
    case ValueType::kString:
      return "string";
    case ValueType::kArray:
      return "array";
    case ValueType::kUint64:
      return "uint64";
    case ValueType::kInt64:
      return "int64";
    case ValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

Result<uint64_t> tensor_n_bytes(std::span<const int64_t> shape, uint32_t type_id) {
  const TensorTypeInfo* type = find_tensor_type(type_id);
  if (type == nullptr) return Status::errorf("unknown tensor type {}", type_id);
  if (shape.empty() || shape.size() > size_t(kMaxDims)) {
    return Status::errorf("{} dimensions, expected 1 to {}", shape.size(), kMaxDims);
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) return Status::errorf("dimension {} is negative ({})", d, shape[d]);
  }
  if (shape[0] % type->block_size != 0) {
    return Status::errorf("row length {} is not a multiple of the {} block size {}", shape[0],
                          type->name, type->block_size);
  }
  int64_t n_elements = 1;
  int64_t n_bytes = 0;
  bool overflow = __builtin_mul_overflow(shape[0] / type->block_size, type->type_size, &n_bytes);
  for (size_t d = 0; d < shape.size(); ++d) {
    overflow |= __builtin_mul_overflow(n_elements, shape[d], &n_elements);
    if (d > 0) overflow |= __builtin_mul_overflow(n_bytes, shape[d], &n_bytes);
  }
  if (overflow) {
    return Status::errorf("shape [{}] has more elements or bytes than fit in int64",
                          fmt::join(shape, ", "));
  }
  return uint64_t(n_bytes);
}

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (const int64_t dim : shape) n *= dim;
  return n;
}

// Fills a GgufFile from its image; each step validates what it reads before using it.
class Parser {
 public:
  explicit Parser(GgufFile& file) : file_(file), cursor_(file.bytes_) {}

  Status run() {
    STRATA_RETURN_IF_ERROR(parse_header());
    STRATA_RETURN_IF_ERROR(parse_metadata());
    STRATA_RETURN_IF_ERROR(parse_alignment());
    STRATA_RETURN_IF_ERROR(parse_tensor_infos());
    const uint64_t alignment = file_.alignment_;
    file_.data_offset_ = (cursor_.pos() + alignment - 1) / alignment * alignment;
    return place_tensors();
  }

 private:
  Status parse_header();
  Status parse_metadata();
  Result<MetadataValue> parse_value(std::string_view key, uint32_t raw_type);
  Status parse_array(std::string_view key, MetadataValue& value);
  Status parse_alignment();
  Status parse_tensor_infos();
  Result<TensorInfo> parse_tensor_info();
  Status place_tensors();

  GgufFile& file_;
  Cursor cursor_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

Status Parser::parse_header() {
  const uint64_t size = file_.bytes_.size();
  if (size < 4) return Status::errorf("not a GGUF file: only {} bytes", size);
  const auto magic = load<uint32_t>(file_.bytes_.data());
  if (magic != kMagic) {
    const std::string_view first4(reinterpret_cast<const char*>(file_.bytes_.data()), 4);
    return Status::errorf("not a GGUF file: starts with \"{}\", not \"GGUF\"", printable(first4));
  }
  cursor_.skip(4);
  STRATA_ASSIGN_OR_RETURN(const uint32_t version, cursor_.read<uint32_t>("the version"));
  if (version != 2 && version != 3) {
    // A big-endian v3 file reads as 0x03000000 here.
    const bool swapped = version == 0x02000000 || version == 0x03000000;
    return Status::errorf("unsupported GGUF version {}{} (Strata reads versions 2 and 3)", version,
                          swapped ? ", a big-endian file" : "");
  }
  file_.version_ = version;
  STRATA_ASSIGN_OR_RETURN(n_tensors_, cursor_.read<uint64_t>("the tensor count"));
  STRATA_ASSIGN_OR_RETURN(n_kv_, cursor_.read<uint64_t>("the metadata count"));
  if (n_kv_ > cursor_.left() / kMinKeyValueBytes) {
    return Status::errorf("header claims {} metadata entries, more than the {} bytes after it hold",
                          n_kv_, cursor_.left());
  }
  if (n_tensors_ > cursor_.left() / kMinTensorInfoBytes) {
    return Status::errorf("header claims {} tensors, more than the {} bytes after it hold",
                          n_tensors_, cursor_.left());
  }
  if (n_kv_ > kMaxKeys || n_tensors_ > kMaxTensors) {
    return Status::errorf("header claims {} metadata entries and {} tensors; the limit is {} each",
                          n_kv_, n_tensors_, kMaxKeys);
  }
  return Status();
}

Status Parser::parse_metadata() {
  std::unordered_set<std::string_view> seen;
  for (uint64_t i = 0; i < n_kv_; ++i) {
    STRATA_ASSIGN_OR_RETURN(const std::string_view key,
                            cursor_.read_string([i] { return fmt::format("key {}", i); }));
    if (!seen.insert(key).second) return Status::errorf("duplicate key {}", printable(key));
    const uint64_t start = cursor_.pos();
    STRATA_ASSIGN_OR_RETURN(const uint32_t raw_type, cursor_.read<uint32_t>([key] {
      return fmt::format("the type of key {}", printable(key));
    }));
    STRATA_ASSIGN_OR_RETURN(MetadataValue value, parse_value(key, raw_type));
    value.encoded = file_.bytes_.subspan(start, cursor_.pos() - start);
    file_.metadata_.emplace_back(std::string(key), std::make_unique<MetadataValue>(value));
  }
  return Status();
}

Result<MetadataValue> Parser::parse_value(std::string_view key, uint32_t raw_type) {
  if (!is_valid_type(raw_type)) {
    return Status::errorf("key {}: unknown value type {}", printable(key), raw_type);
  }
  MetadataValue value;
  value.type = ValueType(raw_type);
  const auto what = [key] { return fmt::format("the value of key {}", printable(key)); };
  if (value.type == ValueType::kString) {
    STRATA_ASSIGN_OR_RETURN(const std::string_view text, cursor_.read_string(what));
    value.payload = {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
  } else if (value.type == ValueType::kArray) {
    STRATA_RETURN_IF_ERROR(parse_array(key, value));
  } else {
    const uint64_t size = scalar_size(value.type);
    STRATA_RETURN_IF_ERROR(cursor_.need(size, what));
    value.payload = {cursor_.here(), size};
    cursor_.skip(size);
  }
  return value;
}

Status Parser::parse_array(std::string_view key, MetadataValue& value) {
  const auto what = [key] { return fmt::format("array {}", printable(key)); };
  STRATA_ASSIGN_OR_RETURN(const uint32_t raw_element, cursor_.read<uint32_t>(what));
  if (!is_valid_type(raw_element)) {
    return Status::errorf("key {}: unknown array element type {}", printable(key), raw_element);
  }
  value.element_type = ValueType(raw_element);
  if (value.element_type == ValueType::kArray) {
    return Status::errorf("key {}: arrays of arrays are not supported", printable(key));
  }
  STRATA_ASSIGN_OR_RETURN(value.count, cursor_.read<uint64_t>(what));
  const uint64_t start = cursor_.pos();
  const uint64_t element_size =
      value.element_type == ValueType::kString ? 8 : scalar_size(value.element_type);
  if (value.count > cursor_.left() / element_size) {
    return Status::errorf("truncated at offset {}: array {} of {} {} elements, {} bytes left",
                          start - 8, printable(key), value.count,
                          value_type_name(value.element_type), cursor_.left());
  }
  if (value.element_type == ValueType::kString) {
    for (uint64_t i = 0; i < value.count; ++i) {
      STRATA_ASSIGN_OR_RETURN(std::string_view ignored, cursor_.read_string(what));
      (void)ignored;
    }
  } else {
    cursor_.skip(value.count * element_size);
  }
  value.payload = {file_.bytes_.data() + start, cursor_.pos() - start};
  return Status();
}

Status Parser::parse_alignment() {
  const MetadataValue* value = file_.find_value("general.alignment");
  if (value == nullptr) return Status();
  if (!is_integer(value->type)) {
    return Status::errorf("general.alignment must be an integer, found {}", describe_type(*value));
  }
  const __int128 alignment = load_integer(value->type, value->payload.data());
  if (alignment <= 0 || !std::has_single_bit(uint64_t(alignment))) {
    return Status::errorf("general.alignment must be a non-zero power of two, found {}",
                          integer_text(alignment));
  }
  file_.alignment_ = uint64_t(alignment);
  return Status();
}

Status Parser::parse_tensor_infos() {
  if (n_tensors_ > cursor_.left() / kMinTensorInfoBytes) {
    return Status::errorf(
        "header claims {} tensors, more than the {} bytes after the metadata hold", n_tensors_,
        cursor_.left());
  }
  for (uint64_t i = 0; i < n_tensors_; ++i) {
    STRATA_ASSIGN_OR_RETURN(TensorInfo tensor, parse_tensor_info());
    file_.tensors_.push_back(std::move(tensor));
  }
  // Indexed only now: views into the names stay valid because tensors_ no longer grows.
  for (size_t i = 0; i < file_.tensors_.size(); ++i) {
    if (!file_.tensor_index_.emplace(file_.tensors_[i].name, i).second) {
      return Status::errorf("duplicate tensor name {}", printable(file_.tensors_[i].name));
    }
  }
  return Status();
}

Result<TensorInfo> Parser::parse_tensor_info() {
  TensorInfo tensor;
  STRATA_ASSIGN_OR_RETURN(const std::string_view name, cursor_.read_string("a tensor name"));
  tensor.name = std::string(name);
  const auto label = [name] { return fmt::format("tensor {}", printable(name)); };
  STRATA_ASSIGN_OR_RETURN(const uint32_t n_dims, cursor_.read<uint32_t>(label));
  if (n_dims < 1 || n_dims > kMaxDims) {
    return Status::errorf("{}: {} dimensions, expected 1 to {}", label(), n_dims, kMaxDims);
  }
  for (uint32_t d = 0; d < n_dims; ++d) {
    STRATA_ASSIGN_OR_RETURN(const int64_t dim, cursor_.read<int64_t>(label));
    tensor.shape.push_back(dim);
  }
  STRATA_ASSIGN_OR_RETURN(const uint32_t type_id, cursor_.read<uint32_t>(label));
  STRATA_ASSIGN_OR_RETURN(tensor.offset, cursor_.read<uint64_t>(label));
  tensor.type_id = type_id;
  const auto n_bytes = tensor_n_bytes(tensor.shape, type_id);
  if (!n_bytes.ok()) return n_bytes.status().with_prefix(label());
  tensor.n_bytes = n_bytes.value();
  return tensor;
}

// Turns relative offsets absolute and checks alignment, bounds and overlap.
Status Parser::place_tensors() {
  const uint64_t file_size = file_.bytes_.size();
  std::vector<const TensorInfo*> by_offset;
  for (TensorInfo& tensor : file_.tensors_) {
    const auto label = [&tensor] { return fmt::format("tensor {}", printable(tensor.name)); };
    if (tensor.offset % file_.alignment_ != 0) {
      return Status::errorf("{}: offset {} is not a multiple of the alignment {}", label(),
                            tensor.offset, file_.alignment_);
    }
    uint64_t start = 0;
    uint64_t end = 0;
    if (__builtin_add_overflow(file_.data_offset_, tensor.offset, &start) ||
        __builtin_add_overflow(start, tensor.n_bytes, &end)) {
      return Status::errorf("{}: offset {} is past end of file", label(), tensor.offset);
    }
    if (end > file_size) {
      return Status::errorf("{}: data ends {} bytes past end of file", label(), end - file_size);
    }
    tensor.offset = start;
    if (tensor.n_bytes > 0) by_offset.push_back(&tensor);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& prev = *by_offset[i - 1];
    const TensorInfo& next = *by_offset[i];
    if (prev.offset + prev.n_bytes > next.offset) {
      return Status::errorf("tensors {} and {} overlap ({} ends at {}, {} starts at {})",
                            printable(prev.name), printable(next.name), printable(prev.name),
                            prev.offset + prev.n_bytes, printable(next.name), next.offset);
    }
  }
  return Status();
}

GgufFile::GgufFile() = default;
GgufFile::~GgufFile() = default;

Result<std::shared_ptr<const GgufFile>> GgufFile::open(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::open(path));
  const std::span<const uint8_t> bytes = mapped->bytes();
  auto file = std::shared_ptr<GgufFile>(new GgufFile());
  file->mapping_ = std::shared_ptr<MappedFile>(std::move(mapped));
  STRATA_RETURN_IF_ERROR(file->parse_image(bytes, path));
  if (file->has(kSplitCountKey)) {
    STRATA_ASSIGN_OR_RETURN(const uint64_t count, file->get_uint(kSplitCountKey));
    if (count > 1) return open_split(*file, count);
  }
  return std::shared_ptr<const GgufFile>(std::move(file));
}

Result<std::shared_ptr<const GgufFile>> GgufFile::parse(std::span<const uint8_t> bytes,
                                                        std::string name) {
  auto file = std::shared_ptr<GgufFile>(new GgufFile());
  STRATA_RETURN_IF_ERROR(file->parse_image(bytes, std::move(name)));
  return std::shared_ptr<const GgufFile>(std::move(file));
}

Status GgufFile::parse_image(std::span<const uint8_t> bytes, std::string name) {
  name_ = std::move(name);
  bytes_ = bytes;
  parts_ = {FilePart{name_, 0, bytes.size()}};
  return Parser(*this).run().with_prefix(name_);
}

uint64_t GgufFile::file_size() const {
  uint64_t bytes = 0;
  for (const FilePart& part : parts_) bytes += part.size;
  return bytes;
}

void GgufFile::take_metadata_but_split_keys(GgufFile& part) {
  for (auto& entry : part.metadata_) {
    if (!entry.first.starts_with("split.")) metadata_.push_back(std::move(entry));
  }
}

const MetadataValue* GgufFile::find_value(std::string_view key) const {
  for (const auto& [name, value] : metadata_)
    if (name == key) return value.get();
  return nullptr;
}

Status GgufFile::key_error(std::string_view key, std::string_view problem) const {
  return Status::errorf("{}: key {}: {}", name_, printable(key), problem);
}

bool GgufFile::has(std::string_view key) const { return find_value(key) != nullptr; }

std::vector<std::string> GgufFile::keys() const {
  std::vector<std::string> result;
  result.reserve(metadata_.size());
  for (const auto& entry : metadata_) result.push_back(entry.first);
  return result;
}

Result<ValueType> GgufFile::type_of(std::string_view key) const {
  const MetadataValue* value = find_value(key);
  if (value == nullptr) return key_error(key, "missing");
  return value->type;
}

Result<const MetadataValue*> GgufFile::lookup(std::string_view key,
                                              bool (*accepts)(const MetadataValue&),
                                              std::string_view expected) const {
  const MetadataValue* value = find_value(key);
  if (value == nullptr) return key_error(key, "missing");
  if (!accepts(*value)) {
    return key_error(key, fmt::format("expected {}, found {}", expected, describe_type(*value)));
  }
  return value;
}

namespace {

bool accepts_integer(const MetadataValue& value) { return is_integer(value.type); }
bool accepts_float(const MetadataValue& value) { return is_float(value.type); }
bool accepts_bool(const MetadataValue& value) { return value.type == ValueType::kBool; }
bool accepts_string(const MetadataValue& value) { return value.type == ValueType::kString; }
bool accepts_string_array(const MetadataValue& value) {
  return value.type == ValueType::kArray && value.element_type == ValueType::kString;
}
bool accepts_integer_array(const MetadataValue& value) {
  return value.type == ValueType::kArray && is_integer(value.element_type);
}
bool accepts_float_array(const MetadataValue& value) {
  return value.type == ValueType::kArray && is_float(value.element_type);
}

std::string_view as_text(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace

Result<std::span<const uint8_t>> GgufFile::raw_value(std::string_view key) const {
  const MetadataValue* value = find_value(key);
  if (value == nullptr) return key_error(key, "missing");
  return value->encoded;
}

Result<uint64_t> GgufFile::get_uint(std::string_view key) const {
  STRATA_ASSIGN_OR_RETURN(const MetadataValue* value,
                          lookup(key, accepts_integer, "an unsigned integer"));
  const __int128 n = load_integer(value->type, value->payload.data());
  if (n < 0)
    return key_error(key, fmt::format("expected an unsigned integer, found {}", integer_text(n)));
  return uint64_t(n);
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  STRATA_ASSIGN_OR_RETURN(const MetadataValue* value, lookup(key, accepts_integer, "an integer"));
  const __int128 n = load_integer(value->type, value->payload.data());
  if (n > std::numeric_limits<int64_t>::max()) {
    return key_error(key, fmt::format("value {} does not fit in int64", integer_text(n)));
  }
  return int64_t(n);
}

Result<double> GgufFile::get_float(std::string_view key) const {
  STRATA_ASSIGN_OR_RETURN(const MetadataValue* value, lookup(key, accepts_float, "a float"));
  return load_float(value->type, value->payload.data());
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  STRATA_ASSIGN_OR_RETURN(const MetadataValue* value, lookup(key, accepts_bool, "a bool"));
  return value->payload[0] != 0;
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  STRATA_ASSIGN_OR_RETURN(const MetadataValue* value, lookup(key, accepts_string, "a string"));
  return std::string(as_text(value->payload));
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  STRATA_ASSIGN_OR_RETURN(const MetadataValue* value,
                          lookup(key, accepts_string_array, "an array of strings"));
  std::vector<std::string> result;
  result.reserve(value->count);
  for_each_string(value->payload, value->count,
                  [&](std::string_view text) { result.emplace_back(text); });
  return result;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  STRATA_ASSIGN_OR_RETURN(const MetadataValue* value,
                          lookup(key, accepts_integer_array, "an array of integers"));
  const uint64_t element_size = scalar_size(value->element_type);
  std::vector<int64_t> result(value->count);
  for (uint64_t i = 0; i < value->count; ++i) {
    const __int128 n = load_integer(value->element_type, value->payload.data() + i * element_size);
    if (n > std::numeric_limits<int64_t>::max()) {
      return key_error(key,
                       fmt::format("element {} = {} does not fit in int64", i, integer_text(n)));
    }
    result[i] = int64_t(n);
  }
  return result;
}

Result<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  STRATA_ASSIGN_OR_RETURN(const MetadataValue* value,
                          lookup(key, accepts_float_array, "an array of floats"));
  const uint64_t element_size = scalar_size(value->element_type);
  std::vector<float> result(value->count);
  for (uint64_t i = 0; i < value->count; ++i) {
    result[i] = float(load_float(value->element_type, value->payload.data() + i * element_size));
  }
  return result;
}

std::string GgufFile::describe(std::string_view key) const {
  const MetadataValue* value = find_value(key);
  if (value == nullptr) return "(missing)";
  switch (value->type) {
    case ValueType::kString:
      return fmt::format("\"{}\"", printable(as_text(value->payload), true));
    case ValueType::kArray:
      break;
    default:
      return describe_element(value->type, value->payload.data());
  }
  std::vector<std::string> shown;
  if (value->element_type == ValueType::kString) {
    for_each_string(value->payload, std::min(value->count, kDescribeElements),
                    [&](std::string_view text) {
                      shown.push_back(fmt::format("\"{}\"", printable(text, true)));
                    });
  } else {
    const uint64_t element_size = scalar_size(value->element_type);
    for (uint64_t i = 0; i < std::min(value->count, kDescribeElements); ++i) {
      shown.push_back(
          describe_element(value->element_type, value->payload.data() + i * element_size));
    }
  }
  if (value->count > kDescribeElements) shown.push_back("...");
  return fmt::format("[{} x {}] {}", value->count, value_type_name(value->element_type),
                     fmt::join(shown, ", "));
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::vector<CommandInput> model_inputs(const GgufFile& model, std::string_view what) {
  std::vector<CommandInput> inputs;
  for (const FilePart& part : model.parts()) inputs.push_back({std::string(what), part.path});
  return inputs;
}

}  // namespace strata::gguf
