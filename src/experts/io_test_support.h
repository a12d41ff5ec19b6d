// Helpers for the tests and benchmarks of the I/O layer: a temporary file of seeded random
// bytes, page-aligned buffers (O_DIRECT destinations) and a reference read through
// std::ifstream, which shares no code with the readers under test.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/check.h"

namespace strata::testing {

// A buffer whose address is a multiple of `alignment`, filled with `fill`.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t size, size_t alignment = 4096, uint8_t fill = 0)
      : size_(size),
        data_(static_cast<uint8_t*>(
            std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment))) {
    STRATA_CHECK(data_ != nullptr);
    std::memset(data_, fill, size);
  }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept : size_(other.size_), data_(other.data_) {
    other.data_ = nullptr;
  }

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  size_t size_;
  uint8_t* data_;
};

// A file of `size` random bytes in `directory`, removed on destruction. Written in 1 MiB
// pieces and fsync()ed, so that O_DIRECT reads of it go to the device.
class TempFile {
 public:
  TempFile(const std::string& directory, uint64_t size, uint64_t seed) {
    std::string name = directory + "/strata_io_XXXXXX";
    const int fd = ::mkstemp(name.data());
    STRATA_CHECK(fd >= 0);
    path_ = name;
    std::mt19937_64 random(seed);
    std::vector<uint64_t> piece(1 << 17);
    for (uint64_t written = 0; written < size;) {
      for (uint64_t& word : piece) word = random();
      const size_t n = size_t(std::min<uint64_t>(size - written, piece.size() * 8));
      STRATA_CHECK(::write(fd, piece.data(), n) == ssize_t(n));
      written += n;
    }
    STRATA_CHECK(::fsync(fd) == 0);
    ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The file's bytes [offset, offset + length) through the C++ streams (buffered, no pread).
inline std::vector<uint8_t> reference_read(const std::string& path, uint64_t offset,
                                           size_t length) {
  std::ifstream file(path, std::ios::binary);
  file.seekg(std::streamoff(offset));
  std::vector<uint8_t> bytes(length);
  file.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(length));
  bytes.resize(size_t(file.gcount()));
  return bytes;
}

}  // namespace strata::testing
