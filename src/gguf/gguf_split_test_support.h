// Writing a model as llama.cpp's gguf-split does, for the tests of split models: parts named
// <prefix>-00001-of-0000N.gguf, each with split.no (uint16), split.count (uint16) and
// split.tensors.count (int32), the first with all of the source's metadata before them, and
// the tensors in file order, spread evenly over the parts that hold tensors.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace strata::testing {

struct SplitOptions {
  int n_parts = 3;
  // gguf-split --no-tensor-first-split: the first part holds only metadata.
  bool first_part_without_tensors = false;
};

// Returns the parts' paths, or why writing failed.
inline Result<std::vector<std::string>> write_split_model(const gguf::GgufFile& source,
                                                          const std::string& prefix,
                                                          const SplitOptions& options) {
  const auto& tensors = source.tensors();
  const int first_with_tensors = options.first_part_without_tensors ? 1 : 0;
  const size_t holding = size_t(options.n_parts - first_with_tensors);
  std::vector<std::string> paths;
  size_t next_tensor = 0;
  for (int part = 0; part < options.n_parts; ++part) {
    paths.push_back(prefix + fmt::format("-{:05d}-of-{:05d}.gguf", part + 1, options.n_parts));
    gguf::GgufWriter writer(paths.back());
    if (part == 0) {
      for (const std::string& key : source.keys())
        STRATA_RETURN_IF_ERROR(writer.copy_metadata(source, key));
    }
    writer.set_uint16(gguf::kSplitNoKey, uint16_t(part));
    writer.set_uint16(gguf::kSplitCountKey, uint16_t(options.n_parts));
    writer.set_int32(gguf::kSplitTensorsKey, int32_t(tensors.size()));
    const size_t end = part < first_with_tensors
                           ? next_tensor
                           : tensors.size() * size_t(part - first_with_tensors + 1) / holding;
    const size_t begin = next_tensor;
    for (size_t t = begin; t < end; ++t)
      STRATA_RETURN_IF_ERROR(
          writer.add_tensor(tensors[t].name, tensors[t].shape, tensors[t].type_id).status());
    STRATA_RETURN_IF_ERROR(writer.begin());
    for (size_t t = begin; t < end; ++t) {
      STRATA_RETURN_IF_ERROR(
          writer.write_tensor_data({source.tensor_data(tensors[t]), tensors[t].n_bytes}));
    }
    STRATA_RETURN_IF_ERROR(writer.finish());
    next_tensor = end;
  }
  return paths;
}

}  // namespace strata::testing
