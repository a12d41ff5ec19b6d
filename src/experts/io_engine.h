// The I/O engine: reads expert units (and other byte ranges) from the model file on reader
// threads, in priority order, with cancellation of reads that have not started.
//
// A request is up to kMaxRanges byte ranges read into caller-owned memory (an expert unit is
// three: its gate, up and down slices). Ranges must satisfy the reader's alignment.
// Priorities: lower runs sooner; among equal priorities, first submitted first. Urgent
// (demand) reads use priority 0, read-aheads their predicted rank + 1.
//
// Backends: kPread runs n reader threads, each doing blocking reads; kUring keeps up to
// n reads in flight through io_uring on one submission thread.
//
// Thread-safety: all methods may be called from any thread. wait() blocks the caller.
#pragma once

#include <strata/status.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "experts/file_reader.h"

namespace strata {

enum class IoBackend { kPread, kUring };

struct ReadRange {
  void* destination = nullptr;
  uint64_t offset = 0;
  size_t length = 0;
};

struct IoEngineStats {
  uint64_t requests_completed = 0;
  uint64_t requests_cancelled = 0;
  uint64_t bytes_read = 0;
  double busy_seconds = 0;  // summed over reader threads / in-flight time
};

class IoEngine {
 public:
  static constexpr size_t kMaxRanges = 3;
  using Ticket = uint64_t;

  static Result<std::unique_ptr<IoEngine>> create(std::shared_ptr<FileReader> reader,
                                                  int n_threads, IoBackend backend);
  virtual ~IoEngine() = default;

  virtual Ticket submit(std::span<const ReadRange> ranges, int priority) = 0;
  // Lowers a queued request's priority number (makes it sooner); no effect once started.
  virtual void expedite(Ticket ticket, int priority) = 0;
  // True if the request had not started: it never will, and wait() returns at once.
  virtual bool cancel(Ticket ticket) = 0;
  // Blocks until the request has finished (or was cancelled); returns its status. Each
  // ticket's status is reported once; the ticket is forgotten afterwards.
  virtual Status wait(Ticket ticket) = 0;
  // Non-blocking: has the request finished (successfully or not)?
  virtual bool finished(Ticket ticket) const = 0;

  virtual IoEngineStats stats() const = 0;
  virtual const FileReader& reader() const = 0;
};

}  // namespace strata
