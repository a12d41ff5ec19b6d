#include "base/temporary_path.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>

#include "base/check.h"

namespace strata {
namespace {

// A handful of paths are written at once (a model file, a statistics file, a reference
// directory); 64 leaves room for any mix of them.
constexpr int kSlots = 64;
// PATH_MAX: a longer path cannot be created, so it is never listed (its creation fails first).
constexpr size_t kPathBytes = 4096;

// A slot goes kFree -> kFilling (the path is copied) -> kFile or kDirectory -> kFree, or from
// kFile or kDirectory to kRemoving, after which only the handler touches it.
enum SlotState : int { kFree, kFilling, kFile, kDirectory, kRemoving };

struct Slot {
  std::atomic<int> state{kFree};
  char path[kPathBytes];
};
static_assert(std::atomic<int>::is_always_lock_free);  // read from a signal handler

Slot slots[kSlots];

int list(const std::string& path, TemporaryPath::Kind kind) {
  if (path.size() >= kPathBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(kind == TemporaryPath::Kind::kFile ? kFile : kDirectory,
                         std::memory_order_release);
    return i;
  }
  STRATA_CHECK(false && "more temporary paths at once than the list holds");
  return -1;
}

// getdents64's record (the kernel's struct linux_dirent64).
struct DirectoryEntry {
  uint64_t inode;
  int64_t next_offset;
  unsigned short record_bytes;
  unsigned char type;
  char name[1];
};

// Async-signal-safe: open, getdents64, unlinkat, close and rmdir only.
void remove_directory_of_files(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buffer[4096];
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd, buffer, sizeof(buffer));
      if (n <= 0) break;
      for (long offset = 0; offset < n;) {
        const auto* entry = reinterpret_cast<const DirectoryEntry*>(buffer + offset);
        offset += entry->record_bytes;
        const char* name = entry->name;
        if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0) ::unlinkat(fd, name, 0);
      }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

}  // namespace

TemporaryPath::TemporaryPath(std::string path, Kind kind)
    : path_(std::move(path)), kind_(kind), slot_(list(path_, kind)) {}

TemporaryPath::~TemporaryPath() { remove(); }

TemporaryPath::TemporaryPath(TemporaryPath&& other) noexcept
    : path_(std::move(other.path_)), kind_(other.kind_), slot_(other.slot_) {
  other.path_.clear();
  other.slot_ = -1;
}

TemporaryPath& TemporaryPath::operator=(TemporaryPath&& other) noexcept {
  if (this == &other) return *this;
  remove();
  path_ = std::move(other.path_);
  kind_ = other.kind_;
  slot_ = other.slot_;
  other.path_.clear();
  other.slot_ = -1;
  return *this;
}

void TemporaryPath::unlist() {
  if (slot_ < 0) return;
  int expected = kind_ == Kind::kFile ? kFile : kDirectory;
  // The handler took the slot: it removes the path and ends the process; wait for that.
  if (!slots[slot_].state.compare_exchange_strong(expected, kFree))
    for (;;) ::pause();
  slot_ = -1;
}

void TemporaryPath::release() {
  unlist();
  path_.clear();
}

void TemporaryPath::remove() {
  if (path_.empty()) return;
  std::error_code ignored;  // what cannot be removed is not there, or not ours to report
  if (kind_ == Kind::kFile) {
    std::filesystem::remove(path_, ignored);
  } else {
    std::filesystem::remove_all(path_, ignored);
  }
  unlist();
  path_.clear();
}

void remove_listed_temporary_paths() {
  for (Slot& slot : slots) {
    int state = slot.state.load(std::memory_order_acquire);
    if ((state != kFile && state != kDirectory) ||
        !slot.state.compare_exchange_strong(state, kRemoving))
      continue;
    if (state == kFile) {
      ::unlink(slot.path);
    } else {
      remove_directory_of_files(slot.path);
    }
  }
}

}  // namespace strata
