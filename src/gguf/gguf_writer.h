// Writing GGUF v3 files, streaming: the metadata and tensor infos are collected first, begin()
// writes them, then the tensors' bytes are appended in the order the tensors were added. Only
// the header is ever held in memory, so a 17 GB model is written with a few MiB.
//
// File layout: as documented in gguf_file.h. The writer puts each tensor at the next multiple
// of the alignment (default 32, or `general.alignment` when set) after the previous one, fills
// the gaps with zeros and pads the file's end likewise, as ggml does.
//
// The file is written to "<path>.tmp-<pid>" and renamed to `path` by finish() after an fsync,
// so `path` never holds a partial file; a writer destroyed before finish() succeeded removes
// the temporary (base/temporary_path.h: a second Ctrl-C does too). A character device or a FIFO
// is written in place (base/atomic_file.h). I/O errors come back as a Status naming `path`; after
// one, every later call returns it again. So does an interruption (base/interrupt.h), which
// write_tensor_data() polls: every model writer stops between its chunks.
//
// Usage:
//   GgufWriter writer("out.gguf");
//   writer.set_string("general.architecture", "qwen3moe");
//   STRATA_RETURN_IF_ERROR(writer.add_tensor("token_embd.weight", {128, 768}, 0).status());
//   STRATA_RETURN_IF_ERROR(writer.begin());
//   STRATA_RETURN_IF_ERROR(writer.write_tensor_data(bytes));  // once or in pieces, per tensor
//   STRATA_RETURN_IF_ERROR(writer.finish());
//
// Thread-compatibility: one thread at a time.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/atomic_file.h"
#include "gguf/gguf_file.h"

namespace strata::gguf {

class GgufWriter {
 public:
  explicit GgufWriter(std::string path);
  ~GgufWriter();
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;

  // Metadata, written in the order keys were first set; setting a key again replaces its
  // value in place. REQUIRES: begin() has not been called.
  void set_uint8(std::string_view key, uint8_t value);
  void set_int8(std::string_view key, int8_t value);
  void set_uint16(std::string_view key, uint16_t value);
  void set_int16(std::string_view key, int16_t value);
  void set_uint32(std::string_view key, uint32_t value);
  void set_int32(std::string_view key, int32_t value);
  void set_uint64(std::string_view key, uint64_t value);
  void set_int64(std::string_view key, int64_t value);
  void set_float32(std::string_view key, float value);
  void set_float64(std::string_view key, double value);
  void set_bool(std::string_view key, bool value);
  void set_string(std::string_view key, std::string_view value);
  void set_uint8_array(std::string_view key, std::span<const uint8_t> values);
  void set_int8_array(std::string_view key, std::span<const int8_t> values);
  void set_uint16_array(std::string_view key, std::span<const uint16_t> values);
  void set_int16_array(std::string_view key, std::span<const int16_t> values);
  void set_uint32_array(std::string_view key, std::span<const uint32_t> values);
  void set_int32_array(std::string_view key, std::span<const int32_t> values);
  void set_uint64_array(std::string_view key, std::span<const uint64_t> values);
  void set_int64_array(std::string_view key, std::span<const int64_t> values);
  void set_float32_array(std::string_view key, std::span<const float> values);
  void set_float64_array(std::string_view key, std::span<const double> values);
  void set_bool_array(std::string_view key, std::span<const bool> values);
  void set_string_array(std::string_view key, std::span<const std::string> values);
  // Sets `general.alignment` (uint32, as ggml requires; set_uint32 of that key lands here).
  // Other setters must not write that key. REQUIRES: a power of two.
  void set_alignment(uint32_t alignment);
  // Copies `key` from `file` unchanged, whatever its type. Error if `file` lacks it.
  Status copy_metadata(const GgufFile& file, std::string_view key);

  // Declares the next tensor; returns its size in bytes. Refuses what the reader would refuse
  // and names longer than ggml's 63 bytes. REQUIRES: begin() has not been called.
  Result<uint64_t> add_tensor(std::string name, std::vector<int64_t> shape, uint32_t type_id);

  // Creates the temporary file and writes the header, the tensor infos and the padding.
  Status begin();
  // Appends bytes of the current tensor, which is the first one not yet complete. A call may
  // not run past the end of the current tensor. Fails (removing the temporary) once a signal
  // arrived. REQUIRES: begin() succeeded.
  Status write_tensor_data(std::span<const uint8_t> bytes);
  // Checks every tensor got all its bytes, pads, syncs and renames the file to `path`.
  Status finish();

  const std::string& path() const { return path_; }

 private:
  enum class State { kCollecting, kWriting, kFinished, kFailed };
  struct PendingTensor {
    std::string name;
    std::vector<int64_t> shape;
    uint32_t type_id;
    uint64_t n_bytes;
    uint64_t offset;  // relative to the data section, set by begin()
  };

  void set_value(std::string_view key, std::vector<uint8_t> encoded);
  std::vector<uint8_t> encode_header();
  void advance_past_full_tensors();
  Status write_bytes(std::span<const uint8_t> bytes);
  Status write_zeros(uint64_t n);
  Status flush();
  Status write_unbuffered(std::span<const uint8_t> bytes);
  Status fail(std::string_view what);
  Status fail(Status error);

  std::string path_;
  State state_ = State::kCollecting;
  Status error_;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> metadata_;
  std::vector<PendingTensor> tensors_;

  std::optional<AtomicFile> file_;  // from begin() until finish() or the first error
  uint64_t data_offset_ = 0;
  uint64_t bytes_written_ = 0;  // file position, buffered bytes included
  size_t current_ = 0;          // index of the tensor being filled
  uint64_t current_filled_ = 0;
  std::vector<uint8_t> buffer_;  // small writes collect here; large ones bypass it
};

}  // namespace strata::gguf
