// A file mapped read-only into memory, or the parts of a split model mapped one after the
// other into one range of addresses. The kernel pages them in on first touch, so opening even
// a 17 GB model costs nothing until its bytes are read.
//
// Thread-safety: immutable after open(); the bytes may be read from any thread.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace strata {

// One file of a model and where its bytes sit in the model's byte space. A model in one file
// is its only part, at 0. The parts of a split model follow each other at multiples of
// kFilePartSpacing, so that an offset names one part and one byte of it, and a read widened to
// the O_DIRECT alignment past a part's end stays clear of the next part.
struct FilePart {
  std::string path;
  uint64_t offset = 0;
  uint64_t size = 0;
};
inline constexpr uint64_t kFilePartSpacing = uint64_t(2) << 20;

class MappedFile {
 public:
  // Errors name the file: "m.gguf: cannot open: No such file or directory".
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
  // Maps the files at the offsets FilePart describes: bytes() spans all of them, and the gaps
  // between parts are mapped inaccessible (nothing may read them). REQUIRES: paths not empty.
  static Result<std::unique_ptr<MappedFile>> open_parts(std::span<const std::string> paths);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return parts_.front().path; }
  const std::vector<FilePart>& parts() const { return parts_; }
  // Empty for an empty file (mmap refuses length 0, so nothing is mapped then).
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  uint64_t size() const { return size_; }

 private:
  MappedFile(std::vector<FilePart> parts, const uint8_t* data, uint64_t size)
      : parts_(std::move(parts)), data_(data), size_(size) {}

  std::vector<FilePart> parts_;
  const uint8_t* data_;
  uint64_t size_;
};

}  // namespace strata
