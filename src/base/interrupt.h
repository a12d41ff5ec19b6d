// Ctrl-C (SIGINT) and SIGTERM. main() installs the handlers. The first signal only sets a
// process-wide flag, which long loops poll: the writers between tensors or chunks, generation
// between tokens, evaluation between windows. Code that sees it returns interrupted_error(), so
// that destructors remove what was being written (temporary_path.h) and a command can still
// report what it did. A second signal, for work that does not reach a poll point soon enough,
// removes every temporary path still registered, prints "strata: interrupted" and ends the
// process at once.
//
// Putting a finished output in place (AtomicFile::commit's rename) is bracketed by
// begin_commit() and end_commit() (or CommitScope): a second signal inside the bracket
// does not end the process there, with the user's file replaced and the exit code saying
// "interrupted"; the commit completes and the first signal's flag stops the command at its next
// poll, or it finishes. Once a rename has put something in place the bracket is held until the
// process exits: a command's outputs are its last step, and a second signal after their rename,
// during the report or the exit (which takes its time under the sanitizers), would otherwise end
// it as interrupted with the user's file already replaced. (Parts renamed from their temporary
// names into a directory or parts of their own hold it too; the writers that go on after them
// poll the flag, so a first signal still stops them.)
//
// Exit codes: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), what a shell
// reports for a process the signal killed.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <strata/status.h>

namespace strata {

// Installs the SIGINT and SIGTERM handlers (with SA_RESTART: a signal does not fail the
// system calls of other threads; see interrupt_wakeup_fd() for waiting on input). Later calls
// do nothing.
void install_interrupt_handlers();

// Whether a SIGINT or SIGTERM arrived since the start (or the last clear_interrupt()).
bool interrupted();
// The signal that arrived, 0 if none.
int interrupt_signal();
// 128 + interrupt_signal().
int interrupt_exit_code();
// "interrupted": what code that stopped at the flag returns.
Status interrupted_error();

// Enters the commit bracket; false when a second signal's exit has begun (then do not commit:
// the process is ending, its temporary paths removed).
[[nodiscard]] bool begin_commit();
// Leaves the bracket with nothing put in place (a failed rename): a second signal ends the
// process again. After a rename that put an output in place, do not call it: the bracket stays
// held, and a second signal no longer ends the process, which goes on to its next poll or exit.
void end_commit();

// The bracket as a scope: left at its end unless in_place() was called.
class CommitScope {
 public:
  CommitScope() : entered_(begin_commit()) {}
  ~CommitScope() {
    if (entered_ && !in_place_) end_commit();
  }
  CommitScope(const CommitScope&) = delete;
  CommitScope& operator=(const CommitScope&) = delete;
  // False: a second signal's exit has begun; put nothing in place.
  bool entered() const { return entered_; }
  // Something was renamed into place.
  void in_place() { in_place_ = true; }

 private:
  bool entered_;
  bool in_place_ = false;
};

// Forgets the signal, so that the next one is a first one again: `strata chat` goes on after
// Ctrl-C stopped a reply.
void clear_interrupt();

// A descriptor that becomes readable when a signal arrives, to poll() beside a blocking read
// (which SA_RESTART would otherwise resume); -1 before install_interrupt_handlers().
int interrupt_wakeup_fd();

}  // namespace strata
