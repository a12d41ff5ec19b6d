#include "base/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/temporary_path.h"

namespace strata {

Status write_file_atomically(const std::string& path, std::span<const uint8_t> bytes) {
  TemporaryPath temporary(path + ".tmp-" + std::to_string(getpid()), TemporaryPath::Kind::kFile);
  std::FILE* file = std::fopen(temporary.path().c_str(), "wb");
  if (!file) return Status::errorf("{}: cannot create: {}", path, std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temporary.path().c_str(), path.c_str()) != 0)
    return Status::errorf("{}: cannot write: {}", path, std::strerror(errno));
  temporary.release();
  return Status();
}

Status write_file_atomically(const std::string& path, std::string_view contents) {
  return write_file_atomically(
      path, std::span(reinterpret_cast<const uint8_t*>(contents.data()), contents.size()));
}

}  // namespace strata
