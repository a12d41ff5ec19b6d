// Files appear complete or not at all: written to "<path>.tmp-<pid>", then renamed over
// `path`, so a crash or a full disk never leaves half a file where a reader expects one, and a
// failure or an interruption leaves no temporary either (temporary_path.h). A character device
// or a FIFO (/dev/null, /dev/stdout on a terminal or a pipe) cannot be renamed over without
// replacing the device itself: it is written in place.
//
// What may be written where (an input of the command, an existing file) is decided before any
// work, by check_output_path() (base/output_path.h); these only write.
//
// Thread-compatibility: one thread at a time per AtomicFile.
#pragma once

#include <strata/status.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/temporary_path.h"

namespace strata {

class AtomicFile {
 public:
  // Creates the temporary, or opens the device or FIFO. Errors name `path`.
  static Result<AtomicFile> create(std::string path);
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // A file not committed is abandoned: its temporary is removed, `path` left as it was.
  ~AtomicFile();

  Status write(std::span<const uint8_t> bytes);
  // fsync of the temporary, so that the rename publishes bytes that are on the disk; nothing
  // for a device or a FIFO, which hold no bytes to sync.
  Status sync();
  // Closes the file and renames the temporary over `path`. After it, the file is done.
  Status commit();

  const std::string& path() const { return path_; }

 private:
  AtomicFile(std::string path, TemporaryPath temporary, int fd)
      : path_(std::move(path)), temporary_(std::move(temporary)), fd_(fd) {}
  bool in_place() const { return temporary_.path().empty(); }

  std::string path_;
  TemporaryPath temporary_;  // holds nothing: written in place
  int fd_ = -1;
};

// The whole file at once, through AtomicFile (not synced: these are results, not models).
Status write_file_atomically(const std::string& path, std::span<const uint8_t> bytes);
Status write_file_atomically(const std::string& path, std::string_view contents);

}  // namespace strata
