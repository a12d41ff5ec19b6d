// Opening an input that must be a regular file: a model or one of its parts, a predictor, a
// trace, a suite, a run record, stored reference logits, a warm-start file. open(2) of a FIFO
// waits for a writer, so a FIFO named as a model would hang before any check of what it is;
// the file is therefore opened O_NONBLOCK (which returns at once for a FIFO and changes
// nothing for a regular file), checked with fstat, and only then made blocking.
//
// Thread-safety: a RegularFile is used by one thread at a time; open() may run on any.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <string>

namespace strata {

class RegularFile {
 public:
  // Read-only. Errors name the file: "PATH: cannot open: <reason>", "PATH: is a directory",
  // "PATH: not a regular file".
  static Result<RegularFile> open(const std::string& path);
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  // Hands the descriptor to the caller, who closes it.
  int release();

 private:
  RegularFile(int fd, uint64_t size) : fd_(fd), size_(size) {}

  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace strata
