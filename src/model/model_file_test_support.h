// Helpers for the tests that write model files (requantize, unit layout): a fixture with a
// scratch directory of its own, removed afterwards, and opening a GGUF file under EXPECT.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "gguf/gguf_file.h"

namespace strata::testing {

class ScratchDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("strata_{}_{}_{}", test->test_suite_name(), test->name(), ::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(std::string_view name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

inline std::shared_ptr<const gguf::GgufFile> open_gguf(const std::string& path) {
  auto file = gguf::GgufFile::open(path);
  EXPECT_TRUE(file.ok()) << file.status().message();
  return file.ok() ? file.value() : nullptr;
}

}  // namespace strata::testing
