#include "base/regular_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "base/mapped_file.h"
#include "base/whole_file.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class RegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-regular-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fifo_ = (dir_ / "fifo").string();
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The message of `open` on the FIFO, failing (not hanging) when it waits for a writer: a
  // writer is then connected, so that the blocked open returns and the test can end.
  template <class Open>
  std::string fifo_error(Open open) {
    auto opened = std::async(std::launch::async, [&] { return open(fifo_); });
    if (opened.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << "opening a FIFO waited for a writer";
      const int writer = ::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK);
      if (writer >= 0) ::close(writer);
    }
    const auto result = opened.get();
    return result.ok() ? "opened" : result.status().message();
  }

  fs::path dir_;
  std::string fifo_;
};

TEST_F(RegularFileTest, OpensAFileWithItsSize) {
  const std::string path = (dir_ / "file").string();
  std::ofstream(path) << "twelve bytes";
  const auto file = RegularFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file.value().size(), 12u);
  // Blocking again: reads wait for data rather than fail with EAGAIN.
  EXPECT_EQ(::fcntl(file.value().fd(), F_GETFL) & O_NONBLOCK, 0);
}

TEST_F(RegularFileTest, FifosDirectoriesAndMissingFilesAreOneLineErrors) {
  EXPECT_EQ(fifo_error([](const std::string& p) { return RegularFile::open(p); }),
            fifo_ + ": not a regular file");
  EXPECT_EQ(RegularFile::open(dir_.string()).status().message(),
            dir_.string() + ": is a directory");
  EXPECT_EQ(RegularFile::open("/dev/null").status().message(), "/dev/null: not a regular file");
  EXPECT_EQ(RegularFile::open("/nonexistent/file").status().message(),
            "/nonexistent/file: cannot open: No such file or directory");
}

// The readers of models and of whole files open through RegularFile.
TEST_F(RegularFileTest, ModelAndFileReadersRefuseAFifoWithoutWaiting) {
  EXPECT_EQ(fifo_error([](const std::string& p) { return MappedFile::open(p); }),
            fifo_ + ": not a regular file");
  EXPECT_EQ(fifo_error([](const std::string& p) { return read_whole_file(p); }),
            fifo_ + ": not a regular file");
}

}  // namespace
}  // namespace strata
