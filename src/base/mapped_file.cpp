#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

