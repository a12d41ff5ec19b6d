// The tensor type ids a GGUF file may name, ggml's and Strata's own, with each type's block
// geometry: a row of `n` elements of a type occupies n / block_size * type_size bytes. Part of the
// file format, so it lives here; quant/ implements the arithmetic of the types Strata computes
// with.
#pragma once

#include <cstdint>
#include <string_view>

namespace strata::gguf {

struct TensorTypeInfo {
  uint32_t id;
  std::string_view name;
  int64_t block_size;  // elements per block
  int64_t type_size;   // bytes per block
};

// nullptr for ids the format does not define (or has retired).
const TensorTypeInfo* find_tensor_type(uint32_t id);

// Strata's own types (quant/q2_0.h) take ids from here on, above any ggml assigns; llama.cpp
// refuses a file holding one.
inline constexpr uint32_t kFirstStrataTypeId = 1000;
inline bool is_strata_type(uint32_t id) { return id >= kFirstStrataTypeId; }

}  // namespace strata::gguf
