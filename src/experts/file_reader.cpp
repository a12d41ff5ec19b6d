#include "experts/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/regular_file.h"

namespace strata {
namespace {

constexpr size_t kDirectAlignment = 4096;

uint64_t round_up(uint64_t value, uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

class PosixFileReader final : public FileReader {
 public:
  PosixFileReader(std::string path, int fd, uint64_t size, size_t alignment, bool direct)
      : path_(std::move(path)), fd_(fd), size_(size), alignment_(alignment), direct_(direct) {}
  ~PosixFileReader() override { ::close(fd_); }
  PosixFileReader(const PosixFileReader&) = delete;
  PosixFileReader& operator=(const PosixFileReader&) = delete;

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }
  size_t alignment() const override { return alignment_; }
  bool direct() const override { return direct_; }
  int descriptor() const override { return fd_; }

  Status read(void* destination, uint64_t offset, size_t length) override {
    STRATA_ASSIGN_OR_RETURN(const size_t expected,
                            bytes_in_file(*this, destination, offset, length));
    const int fd = fd_;
    return read_fully(
        path_, [fd](void* to, size_t n, uint64_t at) { return ::pread(fd, to, n, off_t(at)); },
        destination, offset, length, expected, alignment_);
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
  size_t alignment_;
  bool direct_;
};

// The direct-I/O alignment the file system asks for, 0 if it says the file cannot do direct
// I/O, kDirectAlignment if it does not say (statx STATX_DIOALIGN needs Linux 6.1).
size_t queried_direct_alignment(int fd) {
#ifdef STATX_DIOALIGN
  struct statx info;
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &info) == 0 &&
      (info.stx_mask & STATX_DIOALIGN) != 0) {
    if (info.stx_dio_offset_align == 0) return 0;
    return std::max<size_t>({kDirectAlignment, info.stx_dio_mem_align, info.stx_dio_offset_align});
  }
#endif
  return kDirectAlignment;
}

// Some file systems accept O_DIRECT at open and refuse it at the first read (EINVAL), so the
// first block is read once before the reader is trusted with O_DIRECT.
bool direct_read_works(int fd, size_t alignment, uint64_t size) {
  if (size == 0) return true;
  void* block = std::aligned_alloc(alignment, alignment);
  if (block == nullptr) return false;
  ssize_t got;
  do {
    got = ::pread(fd, block, alignment, 0);
  } while (got < 0 && errno == EINTR);
  std::free(block);
  return got > 0;
}

}  // namespace

Status read_error(const std::string& path, uint64_t offset, size_t length, std::string_view cause) {
  return Status::errorf("{}: read of {} bytes at offset {}: {}", path, length, offset, cause);
}

Status short_read_error(const std::string& path, uint64_t offset, size_t length, size_t got,
                        size_t expected) {
  return read_error(path, offset, length, fmt::format("short read, {} of {} bytes", got, expected));
}

Result<size_t> bytes_in_file(const FileReader& reader, const void* destination, uint64_t offset,
                             size_t length) {
  const size_t alignment = reader.alignment();
  if (reinterpret_cast<uintptr_t>(destination) % alignment != 0 || offset % alignment != 0 ||
      length % alignment != 0) {
    return read_error(
        reader.path(), offset, length,
        fmt::format("destination, offset or length not aligned to {} bytes", alignment));
  }
  const uint64_t size = reader.size();
  if (offset > size || length > round_up(size, alignment) - offset) {
    return read_error(reader.path(), offset, length,
                      fmt::format("past end of file ({} bytes)", size));
  }
  return size_t(std::min<uint64_t>(length, size - offset));
}

Status read_fully(const std::string& path, const PreadCall& pread_call, void* destination,
                  uint64_t offset, size_t length, size_t expected, size_t alignment) {
  auto* bytes = static_cast<uint8_t*>(destination);
  size_t done = 0;
  while (done < expected) {
    const ssize_t got = pread_call(bytes + done, length - done, offset + done);
    if (got < 0) {
      if (errno == EINTR) continue;
      return read_error(path, offset, length, std::strerror(errno));
    }
    done += size_t(got);
    if (got == 0 || (done < expected && done % alignment != 0)) {
      return short_read_error(path, offset, length, done, expected);
    }
  }
  if (done < length) std::memset(bytes + done, 0, length - done);
  return Status();
}

Result<std::unique_ptr<FileReader>> open_file_reader(const std::string& path, bool direct) {
  STRATA_ASSIGN_OR_RETURN(RegularFile file, RegularFile::open(path));
  const uint64_t size = file.size();
  const int fd = file.fd();
  // O_DIRECT is set on the open descriptor: a file system that refuses it refuses it here
  // (EINVAL), and the reads stay buffered.
  const int opened_flags = ::fcntl(fd, F_GETFL);
  if (direct && (opened_flags < 0 || ::fcntl(fd, F_SETFL, opened_flags | O_DIRECT) != 0))
    direct = false;
  size_t alignment = 1;
  if (direct) {
    alignment = queried_direct_alignment(fd);
    if (alignment == 0 || !direct_read_works(fd, alignment, size)) {
      // Clearing O_DIRECT on the open descriptor turns it into a buffered one.
      const int flags = ::fcntl(fd, F_GETFL);
      if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0) {
        return Status::errorf("{}: cannot fall back to buffered reads: {}", path,
                              std::strerror(errno));
      }
      direct = false;
      alignment = 1;
    }
  }
  return std::unique_ptr<FileReader>(
      new PosixFileReader(path, file.release(), size, alignment, direct));
}

}  // namespace strata
