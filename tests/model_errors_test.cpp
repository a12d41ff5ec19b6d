// Bad models end in one clear error naming the file, never a crash: shapes that disagree with
// the hyper-parameters, unknown architectures, tensor formats we cannot compute, token ids out
// of range, and corrupted copies of real model files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "cpu/cpu_backend.h"
#include "experts/resident_expert_store.h"
#include "gguf/gguf_writer.h"
#include "golden_data.h"
#include "model/model.h"
#include "model/transformer.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir() {
  const fs::path dir =
      fs::temp_directory_path() / ("strata-model-errors-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

// Copies a golden model's metadata and tensors, letting `edit` change one tensor's declared
// shape or type, or the architecture.
struct Edit {
  std::string tensor;          // tensor to alter ("" none)
  std::vector<int64_t> shape;  // new shape (empty: keep)
  int type_id = -1;            // new type (-1: keep)
  std::string architecture;    // new general.architecture ("" keep)
  std::string drop_tensor;     // tensor to leave out
};

std::string write_edited(const std::string& source, const Edit& edit, const std::string& name) {
  auto file = gguf::GgufFile::open(source).value();
  const std::string path = (scratch_dir() / name).string();
  gguf::GgufWriter writer(path);
  for (const std::string& key : file->keys()) {
    if (key == "general.alignment") continue;
    if (key == "general.architecture" && !edit.architecture.empty()) {
      writer.set_string(key, edit.architecture);
      continue;
    }
    EXPECT_TRUE(writer.copy_metadata(*file, key).ok());
  }
  std::vector<std::pair<const gguf::TensorInfo*, uint64_t>> kept;
  for (const auto& tensor : file->tensors()) {
    if (tensor.name == edit.drop_tensor) continue;
    auto shape = tensor.shape;
    uint32_t type = tensor.type_id;
    if (tensor.name == edit.tensor) {
      if (!edit.shape.empty()) shape = edit.shape;
      if (edit.type_id >= 0) type = uint32_t(edit.type_id);
    }
    kept.push_back({&tensor, writer.add_tensor(tensor.name, shape, type).value()});
  }
  EXPECT_TRUE(writer.begin().ok());
  for (const auto& [tensor, bytes] : kept) {
    std::vector<uint8_t> data(size_t(bytes), 0);
    std::memcpy(data.data(), file->tensor_data(*tensor), std::min<size_t>(bytes, tensor->n_bytes));
    EXPECT_TRUE(writer.write_tensor_data(data).ok());
  }
  EXPECT_TRUE(writer.finish().ok());
  return path;
}

std::string load_error(const std::string& path) {
  const auto file = gguf::GgufFile::open(path);
  if (!file.ok()) return file.status().message();
  const auto model = Model::load(file.value());
  return model.ok() ? "" : model.status().message();
}

const std::string kTiny = (golden::root() / "synthetic/models/tiny-qwen3moe-q4_0.gguf").string();

TEST(ModelErrors, ShapeThatDisagreesWithHyperParameters) {
  const auto path =
      write_edited(kTiny, {.tensor = "blk.2.attn_k.weight", .shape = {128, 96}}, "shape.gguf");
  const std::string error = load_error(path);
  EXPECT_NE(error.find("shape.gguf"), std::string::npos) << error;
  EXPECT_NE(
      error.find(
          "blk.2.attn_k.weight has shape [128, 96], but the hyper-parameters imply [128, 64]"),
      std::string::npos)
      << error;
}

TEST(ModelErrors, ExpertTensorWithWrongExpertCount) {
  const auto path = write_edited(
      kTiny, {.tensor = "blk.0.ffn_up_exps.weight", .shape = {128, 64, 8}}, "experts.gguf");
  EXPECT_NE(load_error(path).find("blk.0.ffn_up_exps.weight has shape [128, 64, 8]"),
            std::string::npos);
}

TEST(ModelErrors, UnknownArchitecture) {
  const auto path = write_edited(kTiny, {.architecture = "llama"}, "arch.gguf");
  EXPECT_NE(load_error(path).find("unknown architecture 'llama' (supported: qwen3moe, qwen2moe)"),
            std::string::npos)
      << load_error(path);
}

TEST(ModelErrors, MissingTensor) {
  const auto path = write_edited(kTiny, {.drop_tensor = "blk.3.ffn_norm.weight"}, "missing.gguf");
  EXPECT_NE(load_error(path).find("missing tensor blk.3.ffn_norm.weight"), std::string::npos);
}

TEST(ModelErrors, TensorFormatWeCannotComputeWith) {
  // IQ2_XXS (id 16): a valid GGUF type, but not one of ours.
  const auto path =
      write_edited((golden::root() / "synthetic/models/tiny-qwen3moe-k256-q4_k_m.gguf").string(),
                   {.tensor = "blk.1.attn_q.weight", .type_id = 16}, "iq2.gguf");
  EXPECT_NE(load_error(path).find(
                "blk.1.attn_q.weight has type IQ2_XXS, which Strata cannot compute with"),
            std::string::npos)
      << load_error(path);
}

TEST(ModelErrors, TokenIdOutOfRange) {
  auto file = gguf::GgufFile::open(kTiny).value();
  auto model = Model::load(file).value();
  ResidentExpertStore store(model->weights().experts);
  const std::unique_ptr<Backend> backend =
      make_cpu_backend(model->config(), model->weight_formats(), 1).value();
  Transformer transformer(model, store, *backend);
  const auto cache = backend->make_kv_cache(4).value();
  std::vector<float> logits;
  const std::vector<int32_t> tokens = {1, 768};
  const Status status = transformer.forward(tokens, 0, *cache, false, logits);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "token id 768 is out of range (the vocabulary has 768 tokens)");
}

// Every corrupted copy either loads and runs (data bytes changed: numbers change, nothing
// breaks) or fails with a one-line message naming the file.
TEST(ModelErrors, CorruptedCopiesNeverCrash) {
  std::ifstream in(kTiny, std::ios::binary);
  const std::vector<char> original((std::istreambuf_iterator<char>(in)), {});
  auto pristine = gguf::GgufFile::open(kTiny).value();
  const size_t header = size_t(pristine->data_offset());
  std::mt19937_64 rng(11);
  const std::string path = (scratch_dir() / "corrupt.gguf").string();
  int loaded = 0, refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<char> bytes = original;
    if (trial % 3 == 0) {
      bytes.resize(size_t(rng() % bytes.size()));  // truncated
    } else {
      const size_t limit = trial % 3 == 1 ? header : bytes.size();  // header or anywhere
      for (int flips = 0; flips < 4; ++flips) bytes[rng() % limit] ^= char(1 << (rng() % 8));
    }
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    const auto file = gguf::GgufFile::open(path);
    const auto model =
        file.ok() ? Model::load(file.value()) : Result<std::shared_ptr<const Model>>(file.status());
    if (!model.ok()) {
      ++refused;
      const std::string message = model.status().message();
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      EXPECT_EQ(message.rfind(path, 0), 0u) << message;
      continue;
    }
    ++loaded;
    ResidentExpertStore store(model.value()->weights().experts);
    const std::unique_ptr<Backend> backend =
        make_cpu_backend(model.value()->config(), model.value()->weight_formats(), 1).value();
    Transformer transformer(model.value(), store, *backend);
    const auto cache = backend->make_kv_cache(4).value();
    std::vector<float> logits;
    const std::vector<int32_t> tokens = {1, 2, 3, 4};
    EXPECT_TRUE(transformer.forward(tokens, 0, *cache, true, logits).ok());
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace strata
