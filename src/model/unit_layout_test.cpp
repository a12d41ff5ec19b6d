// write_expert_layout on the golden synthetic models and the bundled trained model: every byte
// kept, each unit one range of the output, the same logits bit for bit.
#include "model/unit_layout.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>

#include "model/model.h"
#include "model/model_file_test_support.h"
#include "model/requantize.h"
#include "model/tensor_binder.h"
#include "model/tensor_data.h"

namespace strata {
namespace {

using testing::open_gguf;

namespace fs = std::filesystem;

std::string golden_model(std::string_view name) {
  return testing::golden_synthetic("models/" + std::string(name));
}
const std::string kBundled = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";
constexpr size_t kPage = 4096;

class UnitLayoutTest : public testing::ScratchDirectoryTest {
 protected:
  std::shared_ptr<const gguf::GgufFile> repack(const std::string& input, const std::string& name,
                                               RepackOptions options = {}) {
    const auto summary = repack_model_file(input, path(name), options, nullptr);
    EXPECT_TRUE(summary.ok()) << summary.status().message();
    auto file = gguf::GgufFile::open(path(name));
    EXPECT_TRUE(file.ok()) << file.status().message();
    return file.ok() ? file.value() : nullptr;
  }
};

std::span<const uint8_t> bytes_at(const gguf::GgufFile& file, uint64_t offset, uint64_t n) {
  return file.bytes().subspan(offset, n);
}

// Every tensor of `want` is in `got` with the same shape, type and bytes, and nothing else is.
void expect_same_tensors(const gguf::GgufFile& want, const gguf::GgufFile& got) {
  ASSERT_EQ(got.tensors().size(), want.tensors().size());
  for (const gguf::TensorInfo& tensor : want.tensors()) {
    const gguf::TensorInfo* other = got.find_tensor(tensor.name);
    ASSERT_NE(other, nullptr) << tensor.name;
    EXPECT_EQ(other->shape, tensor.shape) << tensor.name;
    EXPECT_EQ(other->type_id, tensor.type_id) << tensor.name;
    EXPECT_TRUE(std::ranges::equal(bytes_at(want, tensor.offset, tensor.n_bytes),
                                   bytes_at(got, other->offset, other->n_bytes)))
        << tensor.name;
  }
}

ExpertLayout experts_of(std::shared_ptr<const gguf::GgufFile> file) {
  auto model = Model::describe(std::move(file));
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.ok() ? model.value()->weights().experts : ExpertLayout{};
}

// Every position's logits of 24 tokens, all experts resident.
std::vector<float> logits_of(const std::string& path) {
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 24; ++i) tokens.push_back((17 + 37 * i) % 700);
  return testing::resident_logits(path, tokens);
}

TEST_F(UnitLayoutTest, KeepsEveryByteAndPutsEachUnitInOneRange) {
  for (const std::string& input_path :
       {golden_model("tiny-qwen3moe-q8_0.gguf"), golden_model("tiny-qwen2moe-q4_0.gguf"),
        golden_model("tiny-qwen3moe-k256-q4_k_m.gguf")}) {
    SCOPED_TRACE(input_path);
    const auto input = open_gguf(input_path);
    const auto output = repack(input_path, fs::path(input_path).filename().string());
    ASSERT_TRUE(input && output);
    const ExpertLayout before = experts_of(input), after = experts_of(output);
    ASSERT_EQ(after.n_layer(), before.n_layer());
    ASSERT_GT(before.n_layer(), 0);
    for (int layer = 0; layer < before.n_layer(); ++layer) {
      const LayerExpertLayout& a = before.layers[size_t(layer)];
      const LayerExpertLayout& b = after.layers[size_t(layer)];
      EXPECT_EQ(a.contiguous_unit_span(kPage), 0u) << "stacked slices are far apart";
      EXPECT_EQ(b.contiguous_unit_span(kPage), b.unit_bytes()) << "layer " << layer;
      for (int e = 0; e < before.n_expert; ++e) {
        for (auto part :
             {&LayerExpertLayout::gate, &LayerExpertLayout::up, &LayerExpertLayout::down}) {
          const ExpertTensorLayout& from = a.*part;
          const ExpertTensorLayout& to = b.*part;
          EXPECT_EQ(to.type, from.type);
          EXPECT_TRUE(
              std::ranges::equal(bytes_at(*input, from.file_offsets[size_t(e)], from.expert_bytes),
                                 bytes_at(*output, to.file_offsets[size_t(e)], to.expert_bytes)))
              << "layer " << layer << " expert " << e;
        }
      }
    }
    EXPECT_EQ(after.most_reads_per_unit(kPage), 1);
    EXPECT_EQ(before.most_reads_per_unit(kPage), 3);
    // Dense tensors byte for byte, every key unchanged.
    for (const gguf::TensorInfo& tensor : input->tensors()) {
      if (is_routed_expert_tensor(tensor)) {
        EXPECT_EQ(output->find_tensor(tensor.name), nullptr) << tensor.name;
        continue;
      }
      const gguf::TensorInfo* copy = output->find_tensor(tensor.name);
      ASSERT_NE(copy, nullptr) << tensor.name;
      EXPECT_TRUE(std::ranges::equal(bytes_at(*input, tensor.offset, tensor.n_bytes),
                                     bytes_at(*output, copy->offset, copy->n_bytes)))
          << tensor.name;
    }
    EXPECT_EQ(output->keys(), input->keys());
    EXPECT_EQ(dense_tensor_bytes(*output), dense_tensor_bytes(*input));
  }
}

TEST_F(UnitLayoutTest, ComputesTheSameLogitsBitForBit) {
  for (const std::string& input_path : {golden_model("tiny-qwen3moe-q8_0.gguf"),
                                        golden_model("tiny-qwen2moe-q4_0.gguf"), kBundled}) {
    SCOPED_TRACE(input_path);
    const auto output = repack(input_path, fs::path(input_path).filename().string());
    ASSERT_TRUE(output);
    const std::vector<float> stacked = logits_of(input_path);
    const std::vector<float> units = logits_of(path(fs::path(input_path).filename().string()));
    ASSERT_FALSE(stacked.empty());
    ASSERT_EQ(units.size(), stacked.size());
    EXPECT_EQ(0, std::memcmp(units.data(), stacked.data(), units.size() * sizeof(float)));
  }
}

TEST_F(UnitLayoutTest, RepackingTwiceChangesNothing) {
  const auto once = repack(kBundled, "once.gguf");
  const auto twice = repack(path("once.gguf"), "twice.gguf");
  ASSERT_TRUE(once && twice);
  EXPECT_TRUE(std::ranges::equal(once->bytes(), twice->bytes()));
}

// The way back: stacked again, every tensor as the original has it, the same logits.
TEST_F(UnitLayoutTest, StackedAgainIsTheOriginalsTensors) {
  const auto original = open_gguf(kBundled);
  ASSERT_TRUE(repack(kBundled, "units.gguf"));
  const auto stacked =
      repack(path("units.gguf"), "stacked.gguf", {.layout = ExpertFileLayout::kStacked});
  ASSERT_TRUE(original && stacked);
  expect_same_tensors(*original, *stacked);
  EXPECT_EQ(experts_of(stacked).most_reads_per_unit(kPage), 3);
  const std::vector<float> a = logits_of(kBundled), b = logits_of(path("stacked.gguf"));
  ASSERT_FALSE(a.empty());
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

TEST_F(UnitLayoutTest, RequantizingKeepsTheUnitLayout) {
  ASSERT_TRUE(repack(golden_model("tiny-qwen3moe-q8_0.gguf"), "units.gguf"));
  RequantizeOptions options;
  options.expert_type = QuantType::kQ4_0;
  const auto summary = requantize_model_file(path("units.gguf"), path("units-q4_0.gguf"), options);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  const ExpertLayout layout = experts_of(open_gguf(path("units-q4_0.gguf")));
  EXPECT_EQ(summary.value().n_expert_tensors, 3 * layout.n_layer() * layout.n_expert);
  for (const LayerExpertLayout& layer : layout.layers) {
    EXPECT_EQ(layer.contiguous_unit_span(kPage), layer.unit_bytes());
    for (const ExpertTensorLayout* part : {&layer.gate, &layer.up, &layer.down})
      EXPECT_EQ(part->type, QuantType::kQ4_0);
  }
}

TEST_F(UnitLayoutTest, NeverReplacesItsInputOrAnExistingFile) {
  const auto input = repack(kBundled, "model.gguf");
  ASSERT_TRUE(input);
  const auto onto_input =
      repack_model_file(path("model.gguf"), path("model.gguf"), {.overwrite = true}, nullptr);
  ASSERT_FALSE(onto_input.ok());
  EXPECT_NE(onto_input.status().message().find("is an input of this command (the model "),
            std::string::npos);
  const auto existing = repack_model_file(kBundled, path("model.gguf"), {}, nullptr);
  ASSERT_FALSE(existing.ok());
  EXPECT_NE(existing.status().message().find("exists; --force replaces it"), std::string::npos);
  EXPECT_TRUE(std::ranges::equal(open_gguf(path("model.gguf"))->bytes(), input->bytes()));
}

// A copy of `input` with tensor `odd` rewritten as zeros of `type`, or left out when `type` is
// nullopt.
void write_altered(const gguf::GgufFile& input, const std::string& output, const std::string& odd,
                   std::optional<QuantType> type) {
  gguf::GgufWriter writer(output);
  for (const std::string& key : input.keys()) ASSERT_TRUE(writer.copy_metadata(input, key).ok());
  for (const gguf::TensorInfo& tensor : input.tensors()) {
    if (tensor.name == odd && !type) continue;
    const uint32_t type_id = tensor.name == odd ? uint32_t(*type) : tensor.type_id;
    ASSERT_TRUE(writer.add_tensor(tensor.name, tensor.shape, type_id).ok());
  }
  ASSERT_TRUE(writer.begin().ok());
  for (const gguf::TensorInfo& tensor : input.tensors()) {
    if (tensor.name != odd) {
      ASSERT_TRUE(writer.write_tensor_data({input.tensor_data(tensor), tensor.n_bytes}).ok());
    } else if (type) {
      const QuantTraits& traits = quant_traits(*type);
      const std::vector<uint8_t> zeros(traits.row_bytes(tensor.shape[0]) * size_t(tensor.shape[1]));
      ASSERT_TRUE(writer.write_tensor_data(zeros).ok());
    }
  }
  ASSERT_TRUE(writer.finish().ok());
}

TEST_F(UnitLayoutTest, OddExpertTensorsAreOneClearError) {
  const auto units = repack(golden_model("tiny-qwen3moe-q8_0.gguf"), "units.gguf");
  ASSERT_TRUE(units);
  const std::string odd = expert_tensor(1, "ffn_up", 2);
  const std::pair<std::optional<QuantType>, std::string> cases[] = {
      {QuantType::kF32, "tensors blk.1.ffn_up.0.weight and blk.1.ffn_up.2.weight differ in type"},
      {std::nullopt, "missing tensor blk.1.ffn_up.2.weight"},
  };
  for (const auto& [type, expected] : cases) {
    write_altered(*units, path("odd.gguf"), odd, type);
    auto file = gguf::GgufFile::open(path("odd.gguf"));
    ASSERT_TRUE(file.ok()) << file.status().message();
    const auto model = Model::describe(file.value());
    ASSERT_FALSE(model.ok());
    EXPECT_NE(model.status().message().find(expected), std::string::npos)
        << model.status().message();
    EXPECT_EQ(model.status().message().find('\n'), std::string::npos);
    std::filesystem::remove(path("odd.gguf"));
  }
}

// --grouped: Q4_0 matrices stored in row groups. Where the CPU has the grouped kernel they are
// copied as they are; without it (ctest model_avx2) the copies are ungrouped. Either way the
// logits are the original's, bit for bit.
TEST_F(UnitLayoutTest, GroupedRowsComputeTheSameLogitsBitForBit) {
  for (const std::string& input_path : {golden_model("tiny-qwen2moe-q4_0.gguf"), kBundled}) {
    SCOPED_TRACE(input_path);
    const auto input = open_gguf(input_path);
    const auto grouped = repack(input_path, "grouped.gguf", {.grouped_rows = true});
    ASSERT_TRUE(input && grouped);
    EXPECT_TRUE(check_row_groups_key(*grouped).ok());
    EXPECT_TRUE(copied_when_resident(*grouped));
    int reordered = 0;
    for (const gguf::TensorInfo& tensor : input->tensors()) {
      if (is_routed_expert_tensor(tensor)) continue;
      const gguf::TensorInfo* copy = grouped->find_tensor(tensor.name);
      ASSERT_NE(copy, nullptr) << tensor.name;
      const bool same = std::ranges::equal(bytes_at(*input, tensor.offset, tensor.n_bytes),
                                           bytes_at(*grouped, copy->offset, copy->n_bytes));
      EXPECT_EQ(same, !groupable(tensor)) << tensor.name;
      reordered += !same;
    }
    EXPECT_GT(reordered, 0);
    const std::vector<float> want = logits_of(input_path), got = logits_of(path("grouped.gguf"));
    ASSERT_FALSE(want.empty());
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
    std::filesystem::remove(path("grouped.gguf"));
  }
}

// The way back from --grouped: stacked, rows in the GGUF order, every tensor as the original's.
TEST_F(UnitLayoutTest, GroupedRowsStackedAgainAreTheOriginalsTensors) {
  const auto original = open_gguf(kBundled);
  ASSERT_TRUE(repack(kBundled, "grouped.gguf", {.grouped_rows = true}));
  const auto stacked =
      repack(path("grouped.gguf"), "stacked.gguf", {.layout = ExpertFileLayout::kStacked});
  ASSERT_TRUE(original && stacked);
  EXPECT_FALSE(stacked->has(kQ4_0RowGroupsKey));
  expect_same_tensors(*original, *stacked);
}

// quantize reads grouped rows in their order and writes the GGUF order: the same file as from
// the plain unit layout.
TEST_F(UnitLayoutTest, RequantizingGroupedRowsGivesThePlainFilesTensors) {
  ASSERT_TRUE(repack(kBundled, "units.gguf"));
  ASSERT_TRUE(repack(kBundled, "grouped.gguf", {.grouped_rows = true}));
  RequantizeOptions options;
  options.expert_type = QuantType::kQ8_0;
  for (const char* name : {"units", "grouped"}) {
    const auto summary = requantize_model_file(path(std::string(name) + ".gguf"),
                                               path(std::string(name) + "-q8_0.gguf"), options);
    ASSERT_TRUE(summary.ok()) << summary.status().message();
  }
  const auto plain = open_gguf(path("units-q8_0.gguf"));
  const auto from_grouped = open_gguf(path("grouped-q8_0.gguf"));
  ASSERT_TRUE(plain && from_grouped);
  EXPECT_FALSE(from_grouped->has(kQ4_0RowGroupsKey));
  expect_same_tensors(*plain, *from_grouped);
}

TEST_F(UnitLayoutTest, UnknownRowGroupsAreOneClearError) {
  const auto grouped =
      repack(golden_model("tiny-qwen2moe-q4_0.gguf"), "grouped.gguf", {.grouped_rows = true});
  ASSERT_TRUE(grouped);
  gguf::GgufWriter writer(path("groups-of-4.gguf"));
  for (const std::string& key : grouped->keys())
    ASSERT_TRUE(writer.copy_metadata(*grouped, key).ok());
  writer.set_uint32(kQ4_0RowGroupsKey, 4);
  for (const gguf::TensorInfo& tensor : grouped->tensors())
    ASSERT_TRUE(writer.add_tensor(tensor.name, tensor.shape, tensor.type_id).ok());
  ASSERT_TRUE(writer.begin().ok());
  for (const gguf::TensorInfo& tensor : grouped->tensors())
    ASSERT_TRUE(writer.write_tensor_data({grouped->tensor_data(tensor), tensor.n_bytes}).ok());
  ASSERT_TRUE(writer.finish().ok());
  const auto file = open_gguf(path("groups-of-4.gguf"));
  ASSERT_TRUE(file);
  const auto model = Model::describe(file);
  const auto copy = load_resident_tensor_data(*file, nullptr);
  for (const Status& status : {model.status(), copy.status()}) {
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find("strata.q4_0_row_groups says Q4_0 rows are stored in groups "
                                    "of 4; this build of Strata reads groups of 8"),
              std::string::npos)
        << status.message();
  }
}

TEST(UnitLayoutNames, RoutedExpertTensorsAreKnownByName) {
  auto named = [](std::string name) {
    gguf::TensorInfo tensor;
    tensor.name = std::move(name);
    tensor.shape = {64, 32};
    return is_routed_expert_tensor(tensor);
  };
  EXPECT_TRUE(named(expert_tensor(3, "ffn_gate", 12)));
  EXPECT_TRUE(named("blk.0.ffn_down.0.weight"));
  EXPECT_FALSE(named("blk.3.ffn_gate.weight"));        // a dense FFN
  EXPECT_FALSE(named("blk.3.ffn_gate_inp.weight"));    // the router
  EXPECT_FALSE(named("blk.3.ffn_gate_shexp.weight"));  // a shared expert
  EXPECT_FALSE(named("blk.3.ffn_gate.12.bias"));
  EXPECT_FALSE(named("blk.x.ffn_up.1.weight"));
}

}  // namespace
}  // namespace strata
