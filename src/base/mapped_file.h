// A whole file mapped read-only into memory. The kernel pages it in on first touch, so opening
// even a 17 GB model costs nothing until its bytes are read.
//
// Thread-safety: immutable after open(); the bytes may be read from any thread.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace strata {

class MappedFile {
 public:
  // Errors name the file: "m.gguf: cannot open: No such file or directory".
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  // Empty for an empty file (mmap refuses length 0, so nothing is mapped then).
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  uint64_t size() const { return size_; }

 private:
  MappedFile(std::string path, const uint8_t* data, uint64_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_;
  uint64_t size_;
};

}  // namespace strata

