// LoadedTensorData: every tensor's bytes as the file has them, or grouped where
// grouped_when_copied says so; a failed read names the file and the tensor.
#include "model/tensor_data.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "cpu/kernels/q4_0_groups.h"
#include "experts/fault_injecting_reader.h"

namespace strata {
namespace {

const std::string kModel =
    std::string(STRATA_SOURCE_DIR) + "/tests/golden/synthetic/models/tiny-qwen3moe-q4_0.gguf";

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(LoadedTensorData, HoldsEveryTensorGroupedWhereTheKernelWantsIt) {
  auto file = gguf::GgufFile::open(kModel).value();
  const auto bytes = file_bytes(kModel);
  auto reader = FaultInjectingReader::over_bytes(kModel, bytes, 4096);
  auto loaded =
      LoadedTensorData::load(*file, *reader, LoadedTensorData::Contents::kAll, nullptr).value();
  int grouped = 0;
  for (const auto& tensor : file->tensors()) {
    std::vector<uint8_t> want(bytes.begin() + int64_t(tensor.offset),
                              bytes.begin() + int64_t(tensor.offset + tensor.n_bytes));
    EXPECT_EQ(loaded->grouped(tensor), grouped_when_copied(tensor)) << tensor.name;
    if (grouped_when_copied(tensor)) {
      group_q4_0_rows(want.data(), tensor.shape[0], tensor.n_elements() / tensor.shape[0]);
      ++grouped;
    }
    ASSERT_NE(loaded->data(tensor), nullptr) << tensor.name;
    EXPECT_EQ(0, std::memcmp(loaded->data(tensor), want.data(), want.size())) << tensor.name;
  }
  EXPECT_EQ(grouped > 0, groups_rows(QuantType::kQ4_0, 64));
  EXPECT_FALSE(grouped_when_copied(*file->find_tensor("token_embd.weight")));
}

TEST(LoadedTensorData, DenseLeavesTheExpertsOut) {
  auto file = gguf::GgufFile::open(kModel).value();
  auto reader = FaultInjectingReader::over_bytes(kModel, file_bytes(kModel), 4096);
  auto loaded =
      LoadedTensorData::load(*file, *reader, LoadedTensorData::Contents::kDense, nullptr).value();
  for (const auto& tensor : file->tensors())
    EXPECT_EQ(loaded->data(tensor) == nullptr, is_routed_expert_tensor(tensor)) << tensor.name;
}

// The memory plan counts the dense weights with bytes_to_load() before anything is read.
TEST(LoadedTensorData, BytesToLoadIsWhatLoadAllocates) {
  auto file = gguf::GgufFile::open(kModel).value();
  for (const size_t alignment : {size_t(512), size_t(4096)})
    for (const auto contents :
         {LoadedTensorData::Contents::kDense, LoadedTensorData::Contents::kAll}) {
      auto reader = FaultInjectingReader::over_bytes(kModel, file_bytes(kModel), alignment);
      auto loaded = LoadedTensorData::load(*file, *reader, contents, nullptr).value();
      EXPECT_EQ(LoadedTensorData::bytes_to_load(*file, alignment, contents), loaded->bytes())
          << alignment;
    }
  EXPECT_GT(LoadedTensorData::bytes_to_load(*file, 4096, LoadedTensorData::Contents::kDense),
            dense_tensor_bytes(*file));
}

TEST(LoadedTensorData, ReadErrorNamesFileAndTensor) {
  auto file = gguf::GgufFile::open(kModel).value();
  auto reader = FaultInjectingReader::over_bytes(kModel, file_bytes(kModel), 4096);
  const auto* tensor = file->find_tensor("blk.1.ffn_up_exps.weight");
  ASSERT_NE(tensor, nullptr);
  // The middle of a 72 KiB tensor: no other tensor's aligned range reaches it.
  const uint64_t middle = tensor->offset + tensor->n_bytes / 2;
  reader->add_rule(FaultInjectingReader::overlapping(middle, middle + 1), ReadFault::error());
  const auto loaded =
      LoadedTensorData::load(*file, *reader, LoadedTensorData::Contents::kAll, nullptr);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find(kModel), std::string::npos) << loaded.status().message();
  EXPECT_NE(loaded.status().message().find("loading tensor blk.1.ffn_up_exps.weight"),
            std::string::npos)
      << loaded.status().message();
}

}  // namespace
}  // namespace strata
