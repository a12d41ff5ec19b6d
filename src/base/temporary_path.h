// A file or a directory being written under a temporary name, renamed into place when complete
// ("<path>.tmp-<pid>", atomic_file.h and gguf/gguf_writer.h). Until release(), the destructor
// removes it, so an error or an interruption (interrupt.h) leaves nothing behind. It is also
// listed where the handler of a second signal finds it: that handler removes every path still
// listed before the process ends, using only async-signal-safe calls.
//
// Thread-safety: a TemporaryPath is used by one thread at a time; different ones may be created
// and destroyed concurrently, and concurrently with the signal handler.
#pragma once

#include <string>

namespace strata {

class TemporaryPath {
 public:
  enum class Kind {
    kFile,
    kDirectory,  // holding files only, which are removed with it
  };

  TemporaryPath() = default;  // holds nothing
  // Nothing is created here: the caller creates `path` next, and it is removed from then on.
  TemporaryPath(std::string path, Kind kind);
  ~TemporaryPath();
  TemporaryPath(TemporaryPath&& other) noexcept;
  TemporaryPath& operator=(TemporaryPath&& other) noexcept;
  TemporaryPath(const TemporaryPath&) = delete;
  TemporaryPath& operator=(const TemporaryPath&) = delete;

  const std::string& path() const { return path_; }
  // The path was renamed into place: it is no longer removed. Call it after the rename, so that
  // a second signal in between finds only a name that no longer exists.
  void release();
  // Removes the path now (if it exists) and holds nothing.
  void remove();

 private:
  void unlist();

  std::string path_;
  Kind kind_ = Kind::kFile;
  int slot_ = -1;  // in the handler's list; -1: not listed
};

// Removes every listed path. Async-signal-safe: for interrupt.cpp's handler only.
void remove_listed_temporary_paths();

}  // namespace strata
