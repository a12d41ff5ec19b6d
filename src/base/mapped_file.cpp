#include "base/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/regular_file.h"

namespace strata {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  const std::string paths[] = {path};
  return open_parts(paths);
}

Result<std::unique_ptr<MappedFile>> MappedFile::open_parts(std::span<const std::string> paths) {
  std::vector<RegularFile> files;
  std::vector<FilePart> parts;
  uint64_t end = 0;
  for (const std::string& path : paths) {
    STRATA_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path));
    const uint64_t offset =
        parts.empty() ? 0 : (end + kFilePartSpacing - 1) / kFilePartSpacing * kFilePartSpacing;
    end = offset + file.size();
    parts.push_back({path, offset, file.size()});
    files.push_back(std::move(file));
  }
  if (end == 0) return std::unique_ptr<MappedFile>(new MappedFile(std::move(parts), nullptr, 0));
  // Reserve the whole range first, then map each part over its place in it. The last part's
  // mapping ends on a page boundary, so the reservation does too (munmap rounds alike).
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  const uint64_t reserved = (end + page - 1) / page * page;
  void* base =
      ::mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) {
    return Status::errorf("{}: cannot reserve {} bytes of addresses: {}", parts.front().path,
                          reserved, std::strerror(errno));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].size == 0) continue;
    void* at = static_cast<uint8_t*>(base) + parts[i].offset;
    // The mappings keep their own references to the files, which close when `files` goes.
    if (::mmap(at, parts[i].size, PROT_READ, MAP_PRIVATE | MAP_FIXED, files[i].fd(), 0) ==
        MAP_FAILED) {
      const int err = errno;
      ::munmap(base, reserved);
      return Status::errorf("{}: cannot map {} bytes: {}", parts[i].path, parts[i].size,
                            std::strerror(err));
    }
  }
  return std::unique_ptr<MappedFile>(
      new MappedFile(std::move(parts), static_cast<const uint8_t*>(base), end));
}

MappedFile::~MappedFile() {
  if (size_ > 0) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace strata
