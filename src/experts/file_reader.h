// Positional reads of one model file: the only way the expert store and the dense-weight
// loader touch the file's data. Streaming reads bypass the page cache (O_DIRECT), so weights
// are never resident behind the memory budget's back.
//
// Contract of read(), shared by every implementation (the O_DIRECT reader, the buffered
// fallback, the in-memory and fault-injecting test doubles, and the io_uring backend):
//  * destination, offset and length must be multiples of alignment(); otherwise the read fails
//    without touching the file ("...: not aligned to 4096 bytes").
//  * The range may run past the end of the file only up to the next multiple of alignment():
//    that is the widening of a tensor that ends the file, and those bytes read as zeros. A range
//    reaching further fails ("...: past end of file (1000 bytes)").
//  * Partial reads and EINTR are retried until the range is complete; a read that stops before
//    the end of the file (the file shrank) fails ("...: short read, 100 of 4096 bytes").
//  * On failure the destination's contents are unspecified.
//
// Thread-safety: read() may be called from several threads at once.
#pragma once

#include <strata/status.h>

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/mapped_file.h"

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

  // The open descriptor the reads go to, for backends that issue them themselves (io_uring);
  // -1 for readers with no single descriptor behind them (in-memory and test doubles, split
  // models).
  virtual int descriptor() const { return -1; }

  // The reader of the file that holds offset `offset`, and where that file starts in this
  // reader's offsets: for backends that issue reads themselves. A reader of one file is its
  // own only part; a split model's reader answers with one of its parts.
  struct Part {
    const FileReader* reader;
    uint64_t start;
  };
  virtual Part part_at(uint64_t offset) const {
    (void)offset;
    return {this, 0};
  }
};

// O_DIRECT preads; where the file system refuses O_DIRECT (tmpfs) it falls back to buffered
// reads and says so through direct(). `direct = false` asks for buffered reads outright.
// Alignment is the file system's direct-I/O requirement (statx STATX_DIOALIGN) rounded up to
// 4096, or 4096 where it cannot be queried: a page-aligned arena meets either, and 4096 is the
// physical sector of common disks that report 512-byte logical blocks.
// Errors name the file: "m.gguf: cannot open: No such file or directory".
Result<std::unique_ptr<FileReader>> open_file_reader(const std::string& path, bool direct = true);

// The same over a model's files (GgufFile::parts()): the reader of its one file, or for a
// split model one reader per part behind a FileReader whose offsets are those of the parts'
// FilePart::offset (and of the model's TensorInfo::offset). A read must lie in one part.
Result<std::unique_ptr<FileReader>> open_file_reader(std::span<const FilePart> parts,
                                                     bool direct = true);

// Building blocks every FileReader implementation uses, so that all of them check, fail and
// word their errors alike.

// "<path>: read of <length> bytes at offset <offset>: <cause>".
Status read_error(const std::string& path, uint64_t offset, size_t length, std::string_view cause);
// read_error() for a read that stopped early: "...: short read, <got> of <expected> bytes".
Status short_read_error(const std::string& path, uint64_t offset, size_t length, size_t got,
                        size_t expected);

// Checks a read against the contract above; returns how many of its bytes lie inside the file
// (fewer than `length` only for a read that ends in the zero-filled tail).
Result<size_t> bytes_in_file(const FileReader& reader, const void* destination, uint64_t offset,
                             size_t length);

// One pread(2)-like call: reads up to `length` bytes at `offset`, returns the count, 0 at the
// end of the file, or -1 with errno set.
using PreadCall = std::function<ssize_t(void* destination, size_t length, uint64_t offset)>;

// The retry loop behind a positional read: calls `pread_call` until `expected` bytes (from
// bytes_in_file) have arrived, retrying partial reads and EINTR, then zero-fills the rest of
// `length`. A partial read that ends off `alignment` can only have met the end of the file
// (O_DIRECT transfers whole blocks otherwise), so it is a short read rather than a retry at
// an offset O_DIRECT would refuse. Exposed so tests can feed it partial reads and EINTR.
Status read_fully(const std::string& path, const PreadCall& pread_call, void* destination,
                  uint64_t offset, size_t length, size_t expected, size_t alignment);

}  // namespace strata
