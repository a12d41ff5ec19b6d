// Runs the strata binary as a user would, for the tests of the command line.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace strata::testing {

struct Outcome {
  int exit_code;
  std::string out, err;
};

// A scratch directory of this test process.
std::filesystem::path scratch();

// `strata ARGUMENTS` through the shell: its exit code, stdout and stderr. `shell_before` runs in
// the same shell first ("ulimit -v 400000; ").
Outcome strata(const std::string& arguments, const std::string& shell_before = "");

// The same, killed after `seconds` (exit code 124): for what must end by itself.
Outcome strata_within(int seconds, const std::string& arguments);

// A shell command line (STRATA_BINARY names the binary in it): its exit code, stdout, and the
// stderr of the whole line.
Outcome shell(const std::string& command_line);

// The last line of `text`: where a failing command says what went wrong.
std::string last_line(const std::string& text);

// Command lines and a text each one's error must hold.
using ErrorCases = std::vector<std::pair<std::string, std::string>>;
// Each command exits 1 with one line "strata: ..." last on stderr that holds the expected text.
void expect_one_line_errors(const ErrorCases& cases);

// `strata ARGUMENTS...` started without waiting for it (posix_spawn, no shell), for sending it
// signals: its stdout and stderr go to files, its stdin is a pipe this process writes.
class RunningStrata {
 public:
  explicit RunningStrata(const std::vector<std::string>& arguments);
  ~RunningStrata();  // kills and reaps it if it still runs
  RunningStrata(const RunningStrata&) = delete;
  RunningStrata& operator=(const RunningStrata&) = delete;

  // Whether it still runs (reaps it if it ended).
  bool running();
  // Sends `signal_number` if it still runs.
  void signal(int signal_number);
  // Waits until it catches `signal_number` (its handler is installed: the SigCgt mask of
  // /proc/PID/status), so that a signal lands in its work rather than in the dynamic loader.
  // False when it ended first.
  bool wait_until_catching(int signal_number);
  void write_input(const std::string& text);
  void close_input();
  std::string out() const;  // what it wrote so far
  std::string err() const;
  // Waits for the end (killing it after `timeout`, which fails the calling test). The exit
  // code, or -N when the signal N killed it (so 130 can only come from its own exit()).
  Outcome wait(std::chrono::milliseconds timeout = std::chrono::minutes(1));

 private:
  pid_t pid_ = -1;
  int status_ = 0;  // waitpid's, once reaped (pid_ is then -1)
  int input_fd_ = -1;
  std::filesystem::path out_path_, err_path_;
};

}  // namespace strata::testing
