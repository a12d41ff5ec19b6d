#include "runtime/provenance.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gguf/gguf_split_writer.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class ProvenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("provenance_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ProvenanceTest, Sha256OfAFileIsTheStandardDigest) {
  const std::string path = (dir_ / "abc").string();
  std::ofstream(path) << "abc";
  const auto digest = sha256_file(path);
  ASSERT_TRUE(digest.ok()) << digest.status().message();
  EXPECT_EQ(digest.value(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// A split model's digest is that of its parts' bytes one after the other, so that it changes
// when any part does; a model in one file keeps its file's digest.
TEST_F(ProvenanceTest, Sha256OfASplitModelCoversEveryPart) {
  const std::string source =
      std::string(STRATA_SOURCE_DIR) + "/tests/golden/synthetic/models/tiny-qwen2moe-q4_0.gguf";
  auto file = gguf::GgufFile::open(source);
  ASSERT_TRUE(file.ok()) << file.status().message();
  const auto parts =
      gguf::write_split_model(*file.value(), (dir_ / "m").string(), {.n_parts = 3}, nullptr);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  const std::string joined = (dir_ / "joined").string();
  {
    std::ofstream out(joined, std::ios::binary);
    for (const std::string& part : parts.value())
      out << std::ifstream(part, std::ios::binary).rdbuf();
  }
  const auto split_digest = sha256_model(parts.value()[0]);
  ASSERT_TRUE(split_digest.ok()) << split_digest.status().message();
  EXPECT_EQ(split_digest.value(), sha256_file(joined).value());
  EXPECT_NE(split_digest.value(), sha256_file(parts.value()[0]).value());
  EXPECT_EQ(sha256_model(source).value(), sha256_file(source).value());
}

}  // namespace
}  // namespace strata
