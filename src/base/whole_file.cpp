#include "base/whole_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/regular_file.h"

namespace strata {

namespace {

// Reads `fd` to its end.
Result<std::string> read_to_end(int fd, const std::string& name) {
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::errorf("{}: cannot read: {}", name, std::strerror(errno));
    }
    bytes.append(buffer, size_t(n));
  }
  return bytes;
}

}  // namespace

Result<std::string> read_whole_file(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const RegularFile file, RegularFile::open(path));
  return read_to_end(file.fd(), path);
}

Result<std::string> read_whole_text(const std::string& path) {
  if (path == "-") return read_to_end(STDIN_FILENO, "standard input");
  // A blocking open: a FIFO given for a text waits for its writer, as a shell's `<` does.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::errorf("{}: cannot open: {}", path, std::strerror(errno));
  struct stat info {};
  Result<std::string> text = ::fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)
                                 ? Result<std::string>(Status::errorf("{}: is a directory", path))
                                 : read_to_end(fd, path);
  ::close(fd);
  return text;
}

}  // namespace strata
