#include "base/mapped_file.h"

#include "base/progress.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace strata {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::errorf("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::errorf("{}: cannot stat: {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::errorf("{}: not a regular file", path);
  }
  const uint64_t size = uint64_t(st.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Status::errorf("{}: cannot map {} bytes: {}", path, size, std::strerror(err));
    }
  }
  ::close(fd);  // the mapping keeps its own reference to the file
  return std::unique_ptr<MappedFile>(new MappedFile(path, static_cast<const uint8_t*>(data), size));
}

MappedFile::~MappedFile() {
  if (size_ > 0) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace strata

namespace strata {

void populate_mapping(std::span<const uint8_t> bytes, ProgressBar* progress) {
  constexpr size_t kChunk = 64u << 20;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (size_t begin = 0; begin < bytes.size(); begin += kChunk) {
    const size_t length = std::min(kChunk, bytes.size() - begin);
    // madvise needs a page-aligned start; MADV_POPULATE_READ (Linux 5.14) faults the pages in
    // without copying; older kernels fall back to touching one byte a page.
    const auto address = reinterpret_cast<uintptr_t>(bytes.data() + begin);
    const uintptr_t aligned = address & ~uintptr_t(page - 1);
#ifdef MADV_POPULATE_READ
    const bool populated = ::madvise(reinterpret_cast<void*>(aligned), length + (address - aligned),
                                     MADV_POPULATE_READ) == 0;
#else
    const bool populated = false;
#endif
    if (!populated) {
      volatile uint8_t sink = 0;
      for (size_t offset = 0; offset < length; offset += page) sink = sink + bytes[begin + offset];
    }
    if (progress) progress->advance(length);
  }
}

}  // namespace strata
