// Runs the strata binary as a user would, for the tests of the command line.
#pragma once

#include <filesystem>
#include <string>

namespace strata::testing {

struct Outcome {
  int exit_code;
  std::string out, err;
};

// A scratch directory of this test process.
std::filesystem::path scratch();

// `strata ARGUMENTS` through the shell: its exit code, stdout and stderr.
Outcome strata(const std::string& arguments);

// The same, killed after `seconds` (exit code 124): for what must end by itself.
Outcome strata_within(int seconds, const std::string& arguments);

// A shell command line (STRATA_BINARY names the binary in it): its exit code, stdout, and the
// stderr of the whole line.
Outcome shell(const std::string& command_line);

// The last line of `text`: where a failing command says what went wrong.
std::string last_line(const std::string& text);

}  // namespace strata::testing
