#include "base/interrupt.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "base/temporary_path.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("strata-interrupt-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The first signal only sets the flag; the second removes every listed path and ends the
// process with 128 + its number, saying so in one line.
TEST(InterruptDeathTest, SecondSignalRemovesListedPathsAndExits) {
  const fs::path dir = scratch("second-signal");
  const std::string file = (dir / "model.gguf.tmp-1").string();
  const std::string directory = (dir / "ref.partial-1").string();
  EXPECT_EXIT(
      {
        install_interrupt_handlers();
        TemporaryPath listed_file(file, TemporaryPath::Kind::kFile);
        std::ofstream(file) << "partial";
        TemporaryPath listed_directory(directory, TemporaryPath::Kind::kDirectory);
        fs::create_directory(directory);
        for (int i = 0; i < 300; ++i)  // more entries than one getdents64 buffer holds
          std::ofstream(directory + "/window-" + std::to_string(i) + ".logits.bin") << i;
        std::raise(SIGTERM);
        if (!interrupted() || interrupt_exit_code() != 143) std::_Exit(3);
        std::raise(SIGTERM);
        std::_Exit(4);  // not reached
      },
      ::testing::ExitedWithCode(143), "strata: interrupted");
  EXPECT_FALSE(fs::exists(file));
  EXPECT_FALSE(fs::exists(directory));
}

// A second signal while an output is being put in place waits for the commit's end: the
// process goes on (to its next poll, here its exit 0). After a commit that put its output in
// place a second signal no longer ends the process; after one that failed, it does.
TEST(InterruptDeathTest, SecondSignalDuringACommitWaitsForItsEnd) {
  const auto commit_through_a_second_signal = [](bool in_place) {
    install_interrupt_handlers();
    std::raise(SIGTERM);
    {
      CommitScope commit;
      if (!commit.entered()) std::_Exit(3);
      std::raise(SIGTERM);
      if (in_place) commit.in_place();
    }
    if (!interrupted()) std::_Exit(4);
  };
  EXPECT_EXIT(
      {
        commit_through_a_second_signal(false);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        commit_through_a_second_signal(true);
        std::raise(SIGTERM);
        std::raise(SIGINT);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(
      {
        commit_through_a_second_signal(false);
        std::raise(SIGTERM);
        std::_Exit(5);  // not reached
      },
      ::testing::ExitedWithCode(143), "strata: interrupted");
}

TEST(Interrupt, FlagWakeupAndClear) {
  install_interrupt_handlers();
  ASSERT_FALSE(interrupted());
  std::raise(SIGINT);
  EXPECT_TRUE(interrupted());
  EXPECT_EQ(interrupt_signal(), SIGINT);
  EXPECT_EQ(interrupt_exit_code(), 130);
  char byte = 0;
  EXPECT_EQ(::read(interrupt_wakeup_fd(), &byte, 1), 1);  // readable for poll()
  clear_interrupt();
  EXPECT_FALSE(interrupted());
  EXPECT_EQ(interrupt_signal(), 0);
  EXPECT_EQ(::read(interrupt_wakeup_fd(), &byte, 1), -1);  // drained
}

}  // namespace
}  // namespace strata
