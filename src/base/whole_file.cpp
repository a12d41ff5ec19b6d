#include "base/whole_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strata {

namespace {

// Reads `fd` to its end, and closes it unless it is standard input.
Result<std::string> read_to_end(int fd, const std::string& name) {
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      if (fd != STDIN_FILENO) ::close(fd);
      return Status::errorf("{}: cannot read: {}", name, std::strerror(error));
    }
    bytes.append(buffer, size_t(n));
  }
  if (fd != STDIN_FILENO) ::close(fd);
  return bytes;
}

}  // namespace

Result<std::string> read_whole_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::errorf("{}: cannot open: {}", path, std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) {
    ::close(fd);
    return Status::errorf("{}: is a directory", path);
  }
  return read_to_end(fd, path);
}

Result<std::string> read_whole_file_or_stdin(const std::string& path) {
  if (path == "-") return read_to_end(STDIN_FILENO, "standard input");
  return read_whole_file(path);
}

}  // namespace strata
