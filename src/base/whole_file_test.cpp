#include "base/whole_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace strata {
namespace {

TEST(WholeFile, ReadsEveryByte) {
  const std::string path = std::filesystem::temp_directory_path() / "strata-whole-file-test";
  std::string bytes(200000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 7);
  std::ofstream(path, std::ios::binary) << bytes;
  const auto read = read_whole_file(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read.value(), bytes);
  std::filesystem::remove(path);
}

TEST(WholeFile, DirectoriesAndMissingFilesAreOneLineErrors) {
  const std::string dir = std::filesystem::temp_directory_path();
  const auto directory = read_whole_file(dir);
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().message(), dir + ": is a directory");
  const auto missing = read_whole_file("/nonexistent/file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "/nonexistent/file: cannot open: No such file or directory");
}

// A text may come through a pipe: a FIFO is read to its writer's end, as `-f <(cmd)` needs.
TEST(WholeFile, TextsAreReadThroughFifos) {
  const std::string fifo =
      std::filesystem::temp_directory_path() / ("strata-whole-text-" + std::to_string(::getpid()));
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << "def fibonacci(n):"; });
  const auto read = read_whole_text(fifo);
  writer.join();
  std::filesystem::remove(fifo);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read.value(), "def fibonacci(n):");
  EXPECT_EQ(read_whole_text("/nonexistent/file").status().message(),
            "/nonexistent/file: cannot open: No such file or directory");
}

}  // namespace
}  // namespace strata
