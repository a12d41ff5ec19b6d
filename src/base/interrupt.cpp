#include "base/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "base/check.h"
#include "base/temporary_path.h"

namespace strata {
namespace {

std::atomic<int> arrived_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);  // set from a signal handler
// The commits in progress (begin_commit) and those that put an output in place (held until the
// exit), or -1 once a second signal's exit has begun.
std::atomic<int> commits{0};
static_assert(std::atomic<int>::is_always_lock_free);
// [read end, write end]: the handler writes a byte for each first signal.
int wakeup_pipe[2] = {-1, -1};

// Async-signal-safe: atomics, write, unlink and friends (temporary_path.cpp), _exit.
extern "C" void on_interrupt(int signal_number) {
  const int saved_errno = errno;
  int none = 0;
  if (arrived_signal.compare_exchange_strong(none, signal_number)) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t written = ::write(wakeup_pipe[1], &byte, 1);
    errno = saved_errno;
    return;
  }
  int idle = 0;
  if (!commits.compare_exchange_strong(idle, -1)) {
    errno = saved_errno;
    return;  // a commit in progress or an output in place (or the exit begun on another thread)
  }
  remove_listed_temporary_paths();
  static constexpr char kMessage[] = "strata: interrupted\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
  ::_exit(128 + signal_number);
}

}  // namespace

void install_interrupt_handlers() {
  if (wakeup_pipe[0] >= 0) return;  // installed already
  // Non-blocking: the handler must never wait for a reader, and draining stops when empty.
  STRATA_CHECK(::pipe2(wakeup_pipe, O_CLOEXEC | O_NONBLOCK) == 0);
  struct sigaction action = {};
  action.sa_handler = on_interrupt;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (const int signal_number : {SIGINT, SIGTERM})
    STRATA_CHECK(::sigaction(signal_number, &action, nullptr) == 0);
}

bool interrupted() { return arrived_signal.load(std::memory_order_relaxed) != 0; }

int interrupt_signal() { return arrived_signal.load(std::memory_order_relaxed); }

int interrupt_exit_code() { return 128 + interrupt_signal(); }

Status interrupted_error() { return Status::error("interrupted"); }

bool begin_commit() {
  int current = commits.load();
  do {
    if (current < 0) return false;
  } while (!commits.compare_exchange_weak(current, current + 1));
  return true;
}

void end_commit() { commits.fetch_sub(1); }

void clear_interrupt() {
  char bytes[64];
  if (wakeup_pipe[0] >= 0)
    while (::read(wakeup_pipe[0], bytes, sizeof(bytes)) > 0) {
    }
  arrived_signal.store(0);
}

int interrupt_wakeup_fd() { return wakeup_pipe[0]; }

}  // namespace strata
