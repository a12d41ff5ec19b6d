// The I/O engine: reads expert units (and other byte ranges) from the model file on reader
// threads, in priority order, with cancellation of reads that have not started.
//
// A request is up to kMaxRanges byte ranges read into caller-owned memory (an expert unit is
// three: its gate, up and down slices). Ranges must satisfy the reader's alignment
// (file_reader.h); a range that does not fails the request, reported by wait().
//
// Life of a request: submit() queues it and returns its ticket. A backend *starts* it when it
// takes it off the queue: from then on its ranges are being read and it can no longer be
// cancelled or reordered. It *finishes* when every range has been read or has failed; its
// status is OK, or the Status of its first range (in submission order) that failed. The
// destinations must stay valid, and must not be touched by the caller, until the request has
// finished (wait() returned or finished() said true) or cancel() returned true.
//
// Ordering: requests start in priority order, lower number first; among equal priorities, in
// submission order (an expedited request keeps its place in submission order). Urgent
// (demand) reads use priority 0, read-aheads their predicted rank + 1. Requests that have
// started run concurrently and may finish in any order.
//
// Tickets start at 1 and are never reused by an engine, so 0 can mean "no request".
// Every ticket must end in exactly one of: wait(), or cancel() returning true. Until then the
// engine keeps the request's record (a few hundred bytes).
//
// Backends:
//  * kPread: n_threads reader threads; each takes the front of the queue and reads its ranges
//    one after the other with FileReader::read(). At most n_threads requests run at once.
//  * kUring: one thread submits and completes reads through io_uring on the reader's
//    descriptor, all ranges of a request at once, with up to uring_depth requests running.
//    create() fails where io_uring is unavailable (seccomp, io_uring_disabled) and for readers
//    without a descriptor (test doubles).
//  * kAuto (the default): kUring where create() can set it up, else kPread. On strata-tiny-moe's
//    14 KB expert slices io_uring's all-ranges-at-once submission turns late read-aheads into
//    timely ones (docs/cache-lab.md); on large slices the two read at the same speed.
//
// Thread-safety: all methods may be called from any thread, concurrently. wait() blocks its
// caller on a condition variable (no spinning); any number of threads may wait at once, each
// on its own ticket. The destructor must not run concurrently with other calls: it cancels the
// queued requests, lets running ones finish, and joins the threads.
#pragma once

#include <strata/status.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "experts/file_reader.h"

namespace strata {

enum class IoBackend { kAuto, kPread, kUring };

// "auto", "pread", "uring"; anything else is an error naming the choices.
Result<IoBackend> parse_io_backend(std::string_view name);
std::string_view io_backend_name(IoBackend backend);

struct ReadRange {
  void* destination = nullptr;
  uint64_t offset = 0;
  size_t length = 0;
};

struct IoEngineStats {
  uint64_t requests_completed = 0;  // finished, successfully or not (failed ones included)
  uint64_t requests_cancelled = 0;  // by cancel() or by the destructor
  uint64_t bytes_read = 0;          // lengths of the ranges read successfully
  // Summed over requests, from start to finish: with several requests running at once it
  // exceeds wall time, as thread time does for a thread pool.
  double busy_seconds = 0;
  // Wall time during which at least one request was running: the share of a stretch of time
  // the disk was kept busy. A streaming run whose disk is busy nearly all the time is at the
  // disk's limit for the bytes it reads, whatever the disk's speed at that moment.
  double active_seconds = 0;
};

class IoEngine {
 public:
  static constexpr size_t kMaxRanges = 3;
  // Reader threads at most: the benches measured 1-4 (docs/streaming-speed.md); past 64 more
  // threads only wait on the same device.
  static constexpr int kMaxThreads = 64;
  // uring_depth at most: a ring of kMaxDepth * kMaxRanges + 1 entries stays under io_uring's
  // limit of 32,768.
  static constexpr int kMaxDepth = 4096;
  using Ticket = uint64_t;

  // uring_depth: the requests kUring keeps running at once; 0: 2 * n_threads. Errors: n_threads
  // outside 1..kMaxThreads, uring_depth outside 0..kMaxDepth, a thread that cannot start.
  static Result<std::unique_ptr<IoEngine>> create(std::shared_ptr<FileReader> reader, int n_threads,
                                                  IoBackend backend, int uring_depth = 0);
  virtual ~IoEngine() = default;

  // REQUIRES: 1 <= ranges.size() <= kMaxRanges.
  virtual Ticket submit(std::span<const ReadRange> ranges, int priority) = 0;
  // Lowers a queued request's priority number (makes it sooner); no effect once started, on
  // an unknown ticket, or when `priority` is not lower than the request's.
  virtual void expedite(Ticket ticket, int priority) = 0;
  // True if the request had not started: it never will, its destinations are untouched, and
  // the ticket is forgotten (a later wait() returns OK at once). False if it has started or
  // finished (wait() for it as usual), or is unknown.
  virtual bool cancel(Ticket ticket) = 0;
  // Blocks until the request has finished (or was cancelled); returns its status. Each
  // ticket's status is reported once; the ticket is forgotten afterwards. A cancelled or
  // forgotten ticket returns OK at once. REQUIRES: no other thread waits on the same ticket.
  virtual Status wait(Ticket ticket) = 0;
  // Non-blocking: has the request finished (successfully or not)? True for a cancelled or
  // forgotten ticket.
  virtual bool finished(Ticket ticket) const = 0;

  virtual IoEngineStats stats() const = 0;
  // Whether a request is running now: a hint for scheduling compute around the reads, stale as
  // soon as it returns.
  virtual bool reading() const = 0;
  virtual const FileReader& reader() const = 0;
  // The backend running the reads: never kAuto.
  virtual IoBackend backend() const = 0;
};

}  // namespace strata
