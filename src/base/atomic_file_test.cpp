#include "base/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <set>
#include <string>

namespace strata {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-atomic-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::set<std::string> names() const {
    std::set<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir_)) found.insert(entry.path().filename());
    return found;
  }
  static std::string contents(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  fs::path dir_;
};

TEST_F(AtomicFileTest, ReplacesAFileThroughATemporary) {
  std::ofstream(path("out.json")) << "old";
  ASSERT_TRUE(write_file_atomically(path("out.json"), std::string_view("new")).ok());
  EXPECT_EQ(contents(path("out.json")), "new");
  EXPECT_EQ(names(), std::set<std::string>{"out.json"});
}

TEST_F(AtomicFileTest, AnAbandonedFileLeavesThePathAsItWas) {
  std::ofstream(path("out.json")) << "old";
  {
    auto file = AtomicFile::create(path("out.json"));
    ASSERT_TRUE(file.ok()) << file.status().message();
    ASSERT_TRUE(file.value().write({reinterpret_cast<const uint8_t*>("new"), 3}).ok());
    EXPECT_EQ(names().size(), 2u);
  }
  EXPECT_EQ(contents(path("out.json")), "old");
  EXPECT_EQ(names(), std::set<std::string>{"out.json"});
}

// Renaming a temporary over /dev/null would replace the device with a file.
TEST_F(AtomicFileTest, DevicesAndFifosAreWrittenInPlace) {
  ASSERT_TRUE(write_file_atomically("/dev/null", std::string_view("discarded")).ok());
  struct stat info {};
  ASSERT_EQ(::stat("/dev/null", &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode));
  const std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto reader = std::async(std::launch::async, [&] { return contents(fifo); });
  auto file = AtomicFile::create(fifo);
  ASSERT_TRUE(file.ok()) << file.status().message();
  ASSERT_TRUE(file.value().write({reinterpret_cast<const uint8_t*>("piped"), 5}).ok());
  ASSERT_TRUE(file.value().sync().ok());
  ASSERT_TRUE(file.value().commit().ok());
  EXPECT_EQ(reader.get(), "piped");
  EXPECT_EQ(names(), std::set<std::string>{"fifo"});
}

}  // namespace
}  // namespace strata
