#include "lab/provenance.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "gguf/gguf_split_writer.h"
#include "model/model_file_test_support.h"

namespace strata {
namespace {

using ProvenanceTest = testing::ScratchDirectoryTest;

TEST_F(ProvenanceTest, Sha256OfAFileIsTheStandardDigest) {
  const std::string abc = path("abc");
  std::ofstream(abc) << "abc";
  const auto digest = sha256_file(abc);
  ASSERT_TRUE(digest.ok()) << digest.status().message();
  EXPECT_EQ(digest.value(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// A split model's digest is that of its parts' bytes one after the other, so that it changes
// when any part does; a model in one file keeps its file's digest.
TEST_F(ProvenanceTest, Sha256OfASplitModelCoversEveryPart) {
  const std::string source = testing::golden_synthetic("models/tiny-qwen2moe-q4_0.gguf");
  auto file = gguf::GgufFile::open(source);
  ASSERT_TRUE(file.ok()) << file.status().message();
  const auto parts = gguf::write_split_model(*file.value(), path("m"), {.n_parts = 3}, nullptr);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  const std::string joined = path("joined");
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

// Result files are shared: the environment they record is what changes the run, nothing else.
TEST(Provenance, EnvironmentKeepsOnlyWhatChangesTheRun) {
  ASSERT_EQ(::setenv("STRATA_SIMD", "avx2", 1), 0);
  ASSERT_EQ(::setenv("MALLOC_ARENA_MAX", "2", 1), 0);
  ASSERT_EQ(::setenv("DEPLOY_NOTE", "hunter2", 1), 0);
  const nlohmann::json env = environment_description();
  EXPECT_EQ(env.value("STRATA_SIMD", ""), "avx2");
  EXPECT_EQ(env.value("MALLOC_ARENA_MAX", ""), "2");
  EXPECT_FALSE(env.contains("DEPLOY_NOTE"));
  EXPECT_FALSE(env.contains("HOME"));
  EXPECT_FALSE(env.contains("PATH"));
  for (const auto& [name, value] : env.items()) EXPECT_TRUE(affects_the_run(name)) << name;
  ::unsetenv("STRATA_SIMD");
  ::unsetenv("MALLOC_ARENA_MAX");
  ::unsetenv("DEPLOY_NOTE");
}

}  // namespace
}  // namespace strata
