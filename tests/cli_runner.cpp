#include "cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>

namespace strata::testing {

namespace fs = std::filesystem;

fs::path scratch() {
  const fs::path dir = fs::temp_directory_path() / ("strata-cli-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

Outcome strata(const std::string& arguments) {
  return shell(std::string(STRATA_BINARY) + " " + arguments);
}

Outcome strata_within(int seconds, const std::string& arguments) {
  return shell("timeout " + std::to_string(seconds) + " " + STRATA_BINARY + " " + arguments);
}

Outcome shell(const std::string& command_line) {
  const fs::path err = scratch() / "stderr.txt";
  const std::string command = "{ " + command_line + "\n} 2>" + err.string();
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    outcome.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err);
  outcome.err.assign(std::istreambuf_iterator<char>(in), {});
  return outcome;
}

std::string last_line(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  return trimmed.substr(trimmed.rfind('\n') == std::string::npos ? 0 : trimmed.rfind('\n') + 1);
}

}  // namespace strata::testing
