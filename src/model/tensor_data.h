// Where the bytes of a model's tensors are: the memory-mapped file (everything resident, the
// page cache decides), or tensors loaded into memory of our own: the dense weights, which the
// budget counts, in streaming mode (routed experts are read separately, into the expert arena),
// or everything, in resident mode when some tensors are to be grouped.
//
// Weights copied into memory of our own are kept the way the kernels read them fastest: Q4_0
// matrices in row groups (cpu/kernels/q4_0_groups.h) where this CPU has the grouped kernel. Weights
// used in place in the mapping stay as the file has them. grouped() says which is which; the
// arena groups the expert slices it reads by the same rule (grouped_when_copied).
//
// A file written by `strata repack --grouped` stores its Q4_0 matrices grouped already
// (kQ4_0RowGroupsKey), so that neither loading nor the arena's reads group anything on a CPU
// with the kernel; on one without it, copies are ungrouped instead.
//
// In GGUF MoE files the routed experts are the only 3-D tensors (ffn_*_exps, [n_expert][rows]
// [cols]), or, in the unit layout, the tensors named blk.N.ffn_{gate,up,down}.E.weight;
// everything else is dense. LoadedTensorData relies on that rule.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/huge_page_memory.h"
#include "experts/file_reader.h"
#include "gguf/gguf_file.h"

namespace strata {

class TensorData {
 public:
  virtual ~TensorData() = default;
  // The tensor's bytes, or nullptr where this source does not hold them (experts, or when
  // only shapes are being checked).
  virtual const uint8_t* data(const gguf::TensorInfo& tensor) const = 0;
  // Whether this source's bytes of the tensor are (or, for experts it does not hold, whoever
  // copies them will make them) grouped rows.
  virtual bool grouped(const gguf::TensorInfo& tensor) const = 0;
};

// Key of a file whose groupable tensors are stored in row groups; its value is the group's rows.
inline constexpr std::string_view kQ4_0RowGroupsKey = "strata.q4_0_row_groups";
// OK without the key, or with it set to the groups this build reads (8 rows, unsigned).
Status check_row_groups_key(const gguf::GgufFile& file);

// Q4_0 matrices and expert stacks with whole groups of rows, on any CPU; never the token
// embedding, which is read a row at a time.
bool groupable(const gguf::TensorInfo& tensor);
// Groupable tensors, on a CPU with the grouped kernel.
bool grouped_when_copied(const gguf::TensorInfo& tensor);
// Groupable tensors of a file that has kQ4_0RowGroupsKey.
bool grouped_in_file(const gguf::GgufFile& file, const gguf::TensorInfo& tensor);
// Whether resident mode copies the file's tensors rather than computing on the mapping: when
// any is grouped in memory or in the file. A copy is on huge pages, where the file's pages are
// mapped 4 KiB at a time: a --grouped 30B-A3B shape decoded 7.6-11 tok/s on the mapping against
// 14-17 copied (docs/streaming.md). And a grouped file needs a copy, ungrouped, without the
// kernel.
bool copied_when_resident(const gguf::GgufFile& file);
// Rewrites n_rows Q4_0 rows of n weights from one order to the other (grouped or not), or
// leaves them where the two agree.
void reorder_rows(uint8_t* rows, int64_t n, int64_t n_rows, bool from_groups, bool to_groups);

class MappedTensorData final : public TensorData {
 public:
  explicit MappedTensorData(const gguf::GgufFile& file) : file_(file) {}
  const uint8_t* data(const gguf::TensorInfo& tensor) const override {
    return file_.tensor_data(tensor);
  }
  bool grouped(const gguf::TensorInfo& tensor) const override {
    return grouped_in_file(file_, tensor);
  }

 private:
  const gguf::GgufFile& file_;
};

bool is_routed_expert_tensor(const gguf::TensorInfo& tensor);
// Bytes of every tensor that is not a routed-expert stack.
uint64_t dense_tensor_bytes(const gguf::GgufFile& file);

// Tensors read with `reader` (O_DIRECT) into one aligned allocation, grouped where
// grouped_when_copied says so (and ungrouped where the file's are grouped and it does not). Tensors
// that follow each other in the file are read as one range, so a file of many small tensors (the
// unit layout's) costs no widening per tensor.
class LoadedTensorData final : public TensorData {
 public:
  enum class Contents { kDense, kAll };
  // `progress` receives bytes as they are read (may be null).
  static Result<std::unique_ptr<LoadedTensorData>> load(const gguf::GgufFile& file,
                                                        FileReader& reader, Contents contents,
                                                        class ProgressBar* progress);
  // The bytes load() allocates with a reader of this alignment: the tensors, the gaps between
  // those that follow each other, and each run widened to the alignment at both ends.
  static uint64_t bytes_to_load(const gguf::GgufFile& file, size_t alignment, Contents contents);
  const uint8_t* data(const gguf::TensorInfo& tensor) const override;
  bool grouped(const gguf::TensorInfo& tensor) const override {
    return grouped_when_copied(tensor);
  }
  uint64_t bytes() const { return bytes_; }

 private:
  HugePageMemory memory_;
  uint64_t bytes_ = 0;
  std::unordered_map<std::string, const uint8_t*> tensors_;
};

// The tensor data of a model used all-resident: the file copied into memory (and grouped or
// ungrouped) when copied_when_resident says so, else the mapping, whose pages are
// read in now. `progress` (may be null) counts the file's bytes. REQUIRES: `file` was opened
// from its path (GgufFile::open), which the copy is read from.
Result<std::shared_ptr<const TensorData>> load_resident_tensor_data(const gguf::GgufFile& file,
                                                                    class ProgressBar* progress);

}  // namespace strata
