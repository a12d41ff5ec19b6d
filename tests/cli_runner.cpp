#include "cli_runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

extern char** environ;

namespace strata::testing {

namespace fs = std::filesystem;

fs::path scratch() {
  const fs::path dir = fs::temp_directory_path() / ("strata-cli-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

Outcome strata(const std::string& arguments, const std::string& shell_before) {
  return shell(shell_before + std::string(STRATA_BINARY) + " " + arguments);
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

void expect_one_line_errors(const ErrorCases& cases) {
  for (const auto& [arguments, expected] : cases) {
    const auto outcome = strata(arguments);
    EXPECT_EQ(outcome.exit_code, 1) << arguments;
    const std::string line = last_line(outcome.err);
    EXPECT_EQ(line.rfind("strata: ", 0), 0u) << arguments << "\n" << outcome.err;
    EXPECT_NE(line.find(expected), std::string::npos) << arguments << "\n" << line;
  }
}

namespace {

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

RunningStrata::RunningStrata(const std::vector<std::string>& arguments) {
  static std::atomic<int> started{0};
  const std::string name = "child-" + std::to_string(started++);
  out_path_ = scratch() / (name + ".out");
  err_path_ = scratch() / (name + ".err");
  int input[2];
  if (::pipe2(input, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  input_fd_ = input[1];
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input[0], STDIN_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path_.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_strings = {STRATA_BINARY};
  argv_strings.insert(argv_strings.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int spawned = posix_spawn(&pid_, STRATA_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(input[0]);
  if (spawned != 0) throw std::runtime_error("posix_spawn failed");
}

RunningStrata::~RunningStrata() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status_, 0);
  }
  close_input();
}

bool RunningStrata::running() {
  if (pid_ < 0) return false;
  if (::waitpid(pid_, &status_, WNOHANG) == 0) return true;
  pid_ = -1;
  return false;
}

void RunningStrata::signal(int signal_number) {
  if (running()) ::kill(pid_, signal_number);
}

bool RunningStrata::wait_until_catching(int signal_number) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (running() && std::chrono::steady_clock::now() < deadline) {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("SigCgt:", 0) == 0 &&
          (std::stoull(line.substr(7), nullptr, 16) >> (signal_number - 1) & 1) != 0)
        return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return false;
}

void RunningStrata::write_input(const std::string& text) {
  ASSERT_EQ(::write(input_fd_, text.data(), text.size()), ssize_t(text.size()));
}

void RunningStrata::close_input() {
  if (input_fd_ >= 0) ::close(input_fd_);
  input_fd_ = -1;
}

std::string RunningStrata::out() const { return file_text(out_path_); }
std::string RunningStrata::err() const { return file_text(err_path_); }

Outcome RunningStrata::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "strata ran past " << timeout.count() << " ms; killed\n" << err();
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const int code = WIFEXITED(status_) ? WEXITSTATUS(status_) : -WTERMSIG(status_);
  return Outcome{code, out(), err()};
}

}  // namespace strata::testing
