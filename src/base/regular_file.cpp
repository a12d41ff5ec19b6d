#include "base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace strata {

Result<RegularFile> RegularFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::errorf("{}: cannot open: {}", path, std::strerror(errno));
  RegularFile file(fd, 0);
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    return Status::errorf("{}: cannot stat: {}", path, std::strerror(errno));
  if (S_ISDIR(info.st_mode)) return Status::errorf("{}: is a directory", path);
  if (!S_ISREG(info.st_mode)) return Status::errorf("{}: not a regular file", path);
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    return Status::errorf("{}: cannot open: {}", path, std::strerror(errno));
  file.size_ = uint64_t(info.st_size);
  return file;
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

int RegularFile::release() { return std::exchange(fd_, -1); }

}  // namespace strata
