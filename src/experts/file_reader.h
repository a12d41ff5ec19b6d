// Positional reads of one model file: the only way the expert store and the dense-weight
// loader touch the file's data. Streaming reads bypass the page cache (O_DIRECT), so weights
// are never resident behind the memory budget's back.
//
// Thread-safety: read() may be called from several threads at once.
#pragma once

#include <strata/status.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace strata {

class FileReader {
 public:
  virtual ~FileReader() = default;

  virtual const std::string& path() const = 0;
  virtual uint64_t size() const = 0;
  // What destination address, offset and length must be multiples of (4096 for O_DIRECT,
  // 1 for buffered reads). Callers widen their ranges to it.
  virtual size_t alignment() const = 0;
  // True when reads bypass the page cache.
  virtual bool direct() const = 0;

  // Reads exactly `length` bytes at `offset`. A failed or short read is an error naming the
  // file, the offset and the cause ("m.gguf: read of 4096 bytes at offset 123: Input/output
  // error"; "...: short read, 100 of 4096 bytes").
  virtual Status read(void* destination, uint64_t offset, size_t length) = 0;
};

// O_DIRECT preads; where the file system refuses O_DIRECT (tmpfs) it falls back to buffered
// reads and says so through direct().
Result<std::unique_ptr<FileReader>> open_file_reader(const std::string& path);

}  // namespace strata
