#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "base/interrupt.h"
#include "base/temporary_path.h"

namespace strata {
namespace {

// Where writing means sending the bytes to a device or a reader, never storing a file.
bool written_in_place(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode));
}

}  // namespace

Result<AtomicFile> AtomicFile::create(std::string path) {
  if (written_in_place(path)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return Status::errorf("{}: cannot open for writing: {}", path, std::strerror(errno));
    return AtomicFile(std::move(path), TemporaryPath(), fd);
  }
  TemporaryPath temporary(path + ".tmp-" + std::to_string(::getpid()), TemporaryPath::Kind::kFile);
  const int fd = ::open(temporary.path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::errorf("{}: cannot create {}: {}", path, temporary.path(), std::strerror(errno));
  return AtomicFile(std::move(path), std::move(temporary), fd);
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_(std::move(other.temporary_)),
      fd_(std::exchange(other.fd_, -1)) {}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);  // the temporary, if any, goes with temporary_
}

Status AtomicFile::write(std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::errorf("{}: cannot write: {}", path_, std::strerror(errno));
    bytes = bytes.subspan(size_t(n));
  }
  return Status();
}

Status AtomicFile::sync() {
  if (in_place() || ::fsync(fd_) == 0) return Status();
  return Status::errorf("{}: cannot sync: {}", path_, std::strerror(errno));
}

Status AtomicFile::commit() {
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const int error = errno;
    temporary_.remove();
    return Status::errorf("{}: cannot close: {}", path_, std::strerror(error));
  }
  if (in_place()) return Status();
  CommitScope commit;
  if (!commit.entered()) return interrupted_error();  // the exit removes the temporary file
  if (std::rename(temporary_.path().c_str(), path_.c_str()) == 0) {
    commit.in_place();
    temporary_.release();
    return Status();
  }
  const int error = errno;
  const std::string temporary = temporary_.path();
  temporary_.remove();
  return Status::errorf("{}: cannot rename {} into place: {}", path_, temporary,
                        std::strerror(error));
}

Status write_file_atomically(const std::string& path, std::span<const uint8_t> bytes) {
  STRATA_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::create(path));
  STRATA_RETURN_IF_ERROR(file.write(bytes));
  return file.commit();
}

Status write_file_atomically(const std::string& path, std::string_view contents) {
  return write_file_atomically(
      path, std::span(reinterpret_cast<const uint8_t*>(contents.data()), contents.size()));
}

}  // namespace strata
