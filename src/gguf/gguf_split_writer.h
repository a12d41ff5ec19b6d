// Writing a model as split parts, the layout of llama.cpp's gguf-split (gguf_file.h, "Split
// models"): <prefix>-00001-of-0000N.gguf and so on, each with split.no (uint16), split.count
// (uint16) and split.tensors.count (int32); the first part carries all of the source's
// metadata before them (less any split.* keys of its own), and the tensors follow in the
// source's order, their bytes copied unchanged. The parts are written as "<part>.partial-<pid>"
// (each by a GgufWriter) and renamed into place once all of them are complete, so a failure or
// an interruption (base/interrupt.h) leaves no part at all, and parts that --force replaces
// stay as they were until then.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"

namespace strata {
class ProgressBar;
}

namespace strata::gguf {

struct SplitOptions {
  // A part ends before the tensor that would take its tensor bytes past this (a tensor larger
  // than it gets a part of its own), as gguf-split --split-max-size does. 0: use n_parts.
  uint64_t max_part_bytes = 0;
  // Tensors spread over this many parts, evenly by count (when max_part_bytes is 0).
  int n_parts = 0;
  // gguf-split --no-tensor-first-split: a first part of metadata only, before those above.
  bool metadata_only_first_part = false;
  bool overwrite = false;  // replace existing parts (never the source)
};

// "<prefix>-00002-of-00003.gguf": part 2 (numbered from 1) of 3.
std::string split_part_path(const std::string& prefix, int number, int count);

// Writes `source` in parts; returns their paths. Errors: neither or both of max_part_bytes and
// n_parts set, more parts than tensors, more than 99999 parts, an existing part (without
// overwrite) or the source among the outputs, and I/O errors naming the part.
Result<std::vector<std::string>> write_split_model(const GgufFile& source,
                                                   const std::string& prefix,
                                                   const SplitOptions& options,
                                                   ProgressBar* progress);

}  // namespace strata::gguf
