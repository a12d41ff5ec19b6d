#include "base/output_path.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace strata {
namespace {

namespace fs = std::filesystem;

class OutputPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-output-path-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(path("model.gguf")) << "model bytes";
    std::ofstream(path("other.json")) << "{}";
    inputs_ = {{"the prompt file", path("prompt.txt")}, {"the model", path("model.gguf")}};
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  Status check(const std::string& output, ExistingOutput existing = ExistingOutput::kRefuse) {
    return check_output_path(output, inputs_, existing);
  }
  std::string input_error(const std::string& output) const {
    return output + ": is an input of this command (the model " + path("model.gguf") +
           "); refusing to overwrite it";
  }

  fs::path dir_;
  std::vector<CommandInput> inputs_;
};

TEST_F(OutputPathTest, AnInputIsRefusedByNameSymlinkAndHardLink) {
  fs::create_symlink(path("model.gguf"), path("link.gguf"));
  fs::create_hard_link(path("model.gguf"), path("hard.gguf"));
  for (const std::string& output :
       {path("model.gguf"), path("link.gguf"), path("hard.gguf"), path("./model.gguf")}) {
    for (const ExistingOutput existing :
         {ExistingOutput::kRefuse, ExistingOutput::kReplace, ExistingOutput::kUpdate})
      EXPECT_EQ(check(output, existing).message(), input_error(output)) << output;
  }
}

TEST_F(OutputPathTest, AnExistingFileNeedsForce) {
  EXPECT_EQ(check(path("other.json")).message(),
            path("other.json") + ": exists; --force replaces it");
  EXPECT_TRUE(check(path("other.json"), ExistingOutput::kReplace).ok());
  EXPECT_TRUE(check(path("other.json"), ExistingOutput::kUpdate).ok());
  // A symlink to a file that is no input is the file it names.
  fs::create_symlink(path("other.json"), path("other-link.json"));
  EXPECT_EQ(check(path("other-link.json")).message(),
            path("other-link.json") + ": exists; --force replaces it");
}

TEST_F(OutputPathTest, ANewFileNeedsItsDirectory) {
  EXPECT_TRUE(check(path("new.json")).ok());
  // A missing input protects nothing and stops nothing here.
  EXPECT_TRUE(check(path("prompt.txt")).ok());
  EXPECT_EQ(check(path("missing/new.json")).message(), path("missing") + ": no such directory");
  EXPECT_EQ(check(path("other.json/new.json")).message(),
            path("other.json/new.json") + ": cannot write: Not a directory");
}

TEST_F(OutputPathTest, DirectoriesAreRefusedDevicesAndFifosWrittenInPlace) {
  for (const ExistingOutput existing :
       {ExistingOutput::kRefuse, ExistingOutput::kReplace, ExistingOutput::kUpdate})
    EXPECT_EQ(check(dir_.string(), existing).message(), dir_.string() + ": is a directory");
  EXPECT_TRUE(check("/dev/null").ok());
  // /dev/null read as an input too loses nothing: a device holds no bytes.
  inputs_.push_back({"the token file", "/dev/null"});
  EXPECT_TRUE(check("/dev/null").ok());
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_TRUE(check(path("fifo")).ok());
  // A file read and written back cannot be a FIFO or a device.
  EXPECT_EQ(check(path("fifo"), ExistingOutput::kUpdate).message(),
            path("fifo") + ": not a regular file");
  EXPECT_EQ(check("/dev/null", ExistingOutput::kUpdate).message(), "/dev/null: not a regular file");
  // A FIFO the command reads is never also written: the command would wait on itself.
  inputs_.push_back({"the prompt file", path("fifo")});
  EXPECT_EQ(check(path("fifo")).message(), path("fifo") +
                                               ": is an input of this command (the prompt file " +
                                               path("fifo") + "); refusing to overwrite it");
}

}  // namespace
}  // namespace strata
