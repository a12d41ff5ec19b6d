#include "base/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace strata {

Status write_file_atomically(const std::string& path, std::span<const uint8_t> bytes) {
  const std::string temporary = path + ".tmp-" + std::to_string(getpid());
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (!file) return Status::errorf("{}: cannot create: {}", path, std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return Status::errorf("{}: cannot write: {}", path, std::strerror(error));
  }
  return Status();
}

Status write_file_atomically(const std::string& path, std::string_view contents) {
  return write_file_atomically(
      path, std::span(reinterpret_cast<const uint8_t*>(contents.data()), contents.size()));
}

}  // namespace strata
