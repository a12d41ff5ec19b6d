// Test helper: assembles GGUF images field by field, independently of GgufWriter, so reader
// tests do not trust the code they are meant to check, and hostile tests can write fields no
// valid writer would. Layout as documented in gguf_file.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

namespace strata::gguf::testing {

class GgufBytes {
 public:
  template <class T>
  GgufBytes& scalar(T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  GgufBytes& u32(uint32_t value) { return scalar(value); }
  GgufBytes& u64(uint64_t value) { return scalar(value); }
  GgufBytes& str(std::string_view text) {
    u64(text.size());
    bytes_.insert(bytes_.end(), text.begin(), text.end());
    return *this;
  }
  GgufBytes& raw(std::span<const uint8_t> data) {
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    return *this;
  }
  GgufBytes& zeros(uint64_t n) {
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }
  GgufBytes& pad_to(uint64_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
    return *this;
  }

  GgufBytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    bytes_.insert(bytes_.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  // One key with a scalar value of GGUF type `type` (the ValueType number).
  template <class T>
  GgufBytes& kv(std::string_view key, uint32_t type, T value) {
    return str(key).u32(type).scalar(value);
  }
  GgufBytes& kv_string(std::string_view key, std::string_view value) {
    return str(key).u32(8).str(value);
  }
  template <class T>
  GgufBytes& kv_array(std::string_view key, uint32_t element_type,
                      std::initializer_list<T> values) {
    str(key).u32(9).u32(element_type).u64(values.size());
    for (const T& value : values) scalar(value);
    return *this;
  }
  GgufBytes& kv_string_array(std::string_view key, std::initializer_list<std::string_view> values) {
    str(key).u32(9).u32(8).u64(values.size());
    for (std::string_view value : values) str(value);
    return *this;
  }
  GgufBytes& tensor_info(std::string_view name, std::initializer_list<int64_t> shape,
                         uint32_t type_id, uint64_t offset) {
    str(name).u32(uint32_t(shape.size()));
    for (int64_t dim : shape) scalar(dim);
    return u32(type_id).u64(offset);
  }

  uint64_t size() const { return bytes_.size(); }
  std::vector<uint8_t>& bytes() { return bytes_; }
  std::span<const uint8_t> span() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace strata::gguf::testing
