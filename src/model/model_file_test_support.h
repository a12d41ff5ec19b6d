// Helpers for the tests that write model files (requantize, unit layout): a fixture with a
// scratch directory of its own, removed afterwards, opening a GGUF file under EXPECT, the path
// of a golden synthetic file, and a model's logits with every expert resident.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/cpu_backend.h"
#include "experts/resident_expert_store.h"
#include "gguf/gguf_file.h"
#include "model/model.h"
#include "model/tensor_data.h"
#include "model/transformer.h"

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

// tests/golden/synthetic/<relative>: models, logits and sequences from independent tools.
inline std::string golden_synthetic(std::string_view relative) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/golden/synthetic/" + std::string(relative);
}

// Every position's logits of `tokens`, all experts resident, the model loaded as sessions load
// it (load_resident_tensor_data); empty after a failure, which EXPECT reports.
inline std::vector<float> resident_logits(const std::string& path,
                                          const std::vector<int32_t>& tokens) {
  auto file = open_gguf(path);
  if (!file) return {};
  auto data = load_resident_tensor_data(*file, nullptr);
  EXPECT_TRUE(data.ok()) << data.status().message();
  if (!data.ok()) return {};
  auto model = Model::load(file, data.value());
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return {};
  ResidentExpertStore store(model.value()->weights().experts);
  const std::unique_ptr<Backend> backend =
      make_cpu_backend(model.value()->config(), model.value()->weight_formats(), 2).value();
  auto cache = backend->make_kv_cache(int64_t(tokens.size()));
  EXPECT_TRUE(cache.ok()) << cache.status().message();
  if (!cache.ok()) return {};
  Transformer transformer(model.value(), store, *backend);
  std::vector<float> logits;
  const Status status = transformer.forward(tokens, 0, *cache.value(), true, logits);
  EXPECT_TRUE(status.ok()) << status.message();
  return logits;
}

}  // namespace strata::testing
