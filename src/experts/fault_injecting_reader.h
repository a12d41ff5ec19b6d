// Test doubles for FileReader: an in-memory file, and a wrapper that injects I/O errors, short
// reads and delays into chosen reads and counts them (leveldb's fault-injecting Env, for the
// one interface through which the expert store touches the file).
//
// Both keep FileReader's contract (file_reader.h): alignment, the zero-filled tail and the
// error wording are those of the real reader, so a store tested over them sees what it would
// see over a file. Neither has a descriptor, so IoBackend::kUring refuses them; test the store
// over them with kPread.
//
// Thread-safety: read() and every method of FaultInjectingReader may be called from any thread.
// Hooks and delays run outside the reader's lock, so a hook may block (tests hold a read there
// until they release it).
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "experts/file_reader.h"

namespace strata {

// A file held in memory; reads copy from `bytes`. `alignment` > 1 makes it enforce O_DIRECT's
// rules (and report direct() == true) without a disk.
class MemoryFileReader final : public FileReader {
 public:
  MemoryFileReader(std::string path, std::vector<uint8_t> bytes, size_t alignment = 1)
      : path_(std::move(path)), bytes_(std::move(bytes)), alignment_(alignment) {}

  const std::string& path() const override { return path_; }
  uint64_t size() const override { return bytes_.size(); }
  size_t alignment() const override { return alignment_; }
  bool direct() const override { return alignment_ > 1; }
  Status read(void* destination, uint64_t offset, size_t length) override;

 private:
  std::string path_;
  std::vector<uint8_t> bytes_;
  size_t alignment_;
};

// What happens to a read that a rule matches.
struct ReadFault {
  enum class Kind {
    kNone,       // the read goes through (after the delay and hook)
    kError,      // fails with error_number, worded like a failed pread
    kShortRead,  // fails as a short read after bytes_delivered bytes
  };
  Kind kind = Kind::kNone;
  int error_number = EIO;
  size_t bytes_delivered = 0;
  std::chrono::microseconds delay{0};                        // slept before the read
  std::function<void(uint64_t offset, size_t length)> hook;  // run before the read

  static ReadFault error(int error_number = EIO) {
    return {.kind = Kind::kError, .error_number = error_number};
  }
  static ReadFault short_read(size_t bytes_delivered) {
    return {.kind = Kind::kShortRead, .bytes_delivered = bytes_delivered};
  }
  static ReadFault delay_by(std::chrono::microseconds delay) { return {.delay = delay}; }
  static ReadFault call(std::function<void(uint64_t, size_t)> hook) {
    return {.hook = std::move(hook)};
  }
};

class FaultInjectingReader final : public FileReader {
 public:
  // Which reads a rule applies to: called with each read's offset and length.
  using Predicate = std::function<bool(uint64_t offset, size_t length)>;
  static constexpr int64_t kAlways = -1;

  explicit FaultInjectingReader(std::shared_ptr<FileReader> inner) : inner_(std::move(inner)) {}
  // Over an in-memory file (MemoryFileReader).
  static std::shared_ptr<FaultInjectingReader> over_bytes(std::string path,
                                                          std::vector<uint8_t> bytes,
                                                          size_t alignment = 1);

  // Reads that overlap the file's bytes [begin, end).
  static Predicate overlapping(uint64_t begin, uint64_t end);

  // Applies `fault` to the next `times` reads that `matches` accepts (kAlways: to all of
  // them). Rules are tried in the order added; the first that matches and has uses left
  // applies. Returns the rule's index for rule_hits().
  size_t add_rule(Predicate matches, ReadFault fault, int64_t times = kAlways);
  void clear_rules();

  struct ReadRecord {
    uint64_t offset;
    size_t length;
  };
  uint64_t reads() const;                    // read() calls so far, faulted or not
  uint64_t rule_hits(size_t rule) const;     // reads the rule applied to
  std::vector<ReadRecord> read_log() const;  // every read() call, in the order they began

  const std::string& path() const override { return inner_->path(); }
  uint64_t size() const override { return inner_->size(); }
  size_t alignment() const override { return inner_->alignment(); }
  bool direct() const override { return inner_->direct(); }
  Status read(void* destination, uint64_t offset, size_t length) override;

 private:
  struct Rule {
    Predicate matches;
    ReadFault fault;
    int64_t uses_left;
    uint64_t hits = 0;
  };

  std::shared_ptr<FileReader> inner_;
  mutable std::mutex mutex_;
  std::vector<Rule> rules_;
  std::vector<ReadRecord> log_;
};

}  // namespace strata
