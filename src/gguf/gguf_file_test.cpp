#include "gguf/gguf_file.h"

#include "base/mapped_file.h"
#include "gguf/gguf_test_bytes.h"
#include "gguf/tensor_types.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

namespace strata::gguf {
namespace {

namespace fs = std::filesystem;
using testing::GgufBytes;

const fs::path kRoot = STRATA_SOURCE_DIR;
const fs::path kGolden = kRoot / "tests/golden";
const fs::path kSyntheticModels = kGolden / "synthetic/models";

std::shared_ptr<const GgufFile> open_or_die(const fs::path& path) {
  auto file = GgufFile::open(path.string());
  EXPECT_TRUE(file.ok()) << file.status().message();
  return file.ok() ? file.value() : nullptr;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

std::vector<fs::path> golden_gguf_files() {
  std::vector<fs::path> paths;
  for (const fs::path& dir : {kGolden, kRoot / "models"}) {
    for (const auto& entry : fs::recursive_directory_iterator(dir))
      if (entry.path().extension() == ".gguf") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(GgufGolden, EveryFileOpens) {
  const auto paths = golden_gguf_files();
  ASSERT_GE(paths.size(), 13u);
  for (const fs::path& path : paths) {
    SCOPED_TRACE(path.string());
    const auto file = open_or_die(path);
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->version(), 3u);
    EXPECT_EQ(file->alignment(), 32u);
    EXPECT_EQ(file->file_size(), fs::file_size(path));
    EXPECT_TRUE(file->has("general.architecture"));
    for (const TensorInfo& tensor : file->tensors()) {
      EXPECT_GE(tensor.offset, file->data_offset());
      EXPECT_EQ(tensor.offset % 32, 0u);
      EXPECT_LE(tensor.offset + tensor.n_bytes, file->file_size());
      EXPECT_EQ(file->find_tensor(tensor.name), &tensor);
    }
  }
}

// manifest.json was written by the generator from llama.cpp's own view of each file.
TEST(GgufGolden, TensorTypesAndShapesMatchManifest) {
  const nlohmann::json manifest = read_json(kGolden / "synthetic/manifest.json");
  ASSERT_EQ(manifest["models"].size(), 10u);
  for (const auto& [model, facts] : manifest["models"].items()) {
    SCOPED_TRACE(model);
    const auto file = open_or_die(kSyntheticModels / (model + ".gguf"));
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->file_size(), manifest["files"]["models/" + model + ".gguf"]["bytes"]);
    ASSERT_EQ(file->tensors().size(), facts["n_tensors"].get<size_t>());
    ASSERT_EQ(facts["tensors"].size(), facts["n_tensors"].get<size_t>());
    for (const auto& [name, expected] : facts["tensors"].items()) {
      const TensorInfo* tensor = file->find_tensor(name);
      ASSERT_NE(tensor, nullptr) << name;
      EXPECT_EQ(find_tensor_type(tensor->type_id)->name, expected["type"].get<std::string>())
          << name;
      EXPECT_EQ(tensor->shape, expected["ne"].get<std::vector<int64_t>>()) << name;
      const TensorTypeInfo* type = find_tensor_type(tensor->type_id);
      EXPECT_EQ(tensor->n_bytes,
                uint64_t(tensor->n_elements() / type->block_size * type->type_size))
          << name;
    }
  }
}

// The generator's config (*.gen.json) lists each family's tensors (NumPy order, outermost
// first) and hyper-parameters; every quantized variant must carry the same.
TEST(GgufGolden, MetadataAndShapesMatchGeneratorConfig) {
  int files_checked = 0;
  for (const std::string family : {"tiny-qwen3moe", "tiny-qwen2moe", "tiny-qwen3moe-k256"}) {
    const nlohmann::json gen = read_json(kSyntheticModels / (family + ".gen.json"));
    const nlohmann::json& cfg = gen["cfg"];
    const std::string arch = cfg["arch"];
    for (const auto& entry : fs::directory_iterator(kSyntheticModels)) {
      const std::string stem = entry.path().stem().string();
      if (entry.path().extension() != ".gguf" || !stem.starts_with(family + "-")) continue;
      if (family == "tiny-qwen3moe" && stem.starts_with("tiny-qwen3moe-k256")) continue;
      SCOPED_TRACE(stem);
      const auto file = open_or_die(entry.path());
      ASSERT_NE(file, nullptr);
      ++files_checked;
      EXPECT_EQ(file->get_string("general.architecture").value(), arch);
      EXPECT_EQ(file->get_uint(arch + ".block_count").value(), cfg["n_layer"]);
      EXPECT_EQ(file->get_uint(arch + ".embedding_length").value(), cfg["n_embd"]);
      EXPECT_EQ(file->get_uint(arch + ".attention.head_count").value(), cfg["n_head"]);
      EXPECT_EQ(file->get_uint(arch + ".attention.head_count_kv").value(), cfg["n_head_kv"]);
      EXPECT_EQ(file->get_uint(arch + ".expert_count").value(), cfg["n_expert"]);
      EXPECT_EQ(file->get_uint(arch + ".expert_used_count").value(), cfg["n_expert_used"]);
      EXPECT_EQ(file->get_uint(arch + ".context_length").value(), cfg["n_ctx_train"]);
      EXPECT_EQ(file->get_float(arch + ".rope.freq_base").value(),
                float(cfg["rope_freq_base"].get<double>()));
      EXPECT_EQ(file->get_float(arch + ".attention.layer_norm_rms_epsilon").value(),
                float(cfg["rms_eps"].get<double>()));
      const auto tokens = file->get_string_array("tokenizer.ggml.tokens").value();
      ASSERT_EQ(tokens.size(), gen["n_vocab"].get<size_t>());
      for (const auto& [text, id] : gen["special_ids"].items()) EXPECT_EQ(tokens[id], text);
      EXPECT_EQ(file->get_uint("tokenizer.ggml.bos_token_id").value(),
                gen["special_ids"]["<|endoftext|>"]);
      ASSERT_EQ(file->tensors().size(), gen["tensors"].size());
      for (const auto& listed : gen["tensors"]) {
        const TensorInfo* tensor = file->find_tensor(listed[0].get<std::string>());
        ASSERT_NE(tensor, nullptr) << listed[0];
        auto shape = listed[1].get<std::vector<int64_t>>();
        std::reverse(shape.begin(), shape.end());
        EXPECT_EQ(tensor->shape, shape) << listed[0];
      }
    }
  }
  EXPECT_EQ(files_checked, 11);
}

// Counts from tests/golden/README.md; ids from the published Qwen3 tokenizer.
TEST(GgufGolden, Qwen3VocabularyOpensFast) {
  const fs::path path = kGolden / "tokenizer/qwen3-vocab.gguf";
  const auto start = std::chrono::steady_clock::now();
  const auto file = open_or_die(path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_NE(file, nullptr);
  EXPECT_LT(seconds, 1.0);  // ~3 ms optimized; the bound holds even under sanitizers
  const auto tokens_result = file->get_string_array("tokenizer.ggml.tokens");
  const auto merges_result = file->get_string_array("tokenizer.ggml.merges");
  const auto types_result = file->get_int_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(tokens_result.ok() && merges_result.ok() && types_result.ok());
  const auto& tokens = tokens_result.value();
  const auto& merges = merges_result.value();
  const auto& token_types = types_result.value();
  EXPECT_TRUE(file->tensors().empty());
  ASSERT_EQ(tokens.size(), 151669u);
  EXPECT_EQ(merges.size(), 151387u);
  ASSERT_EQ(token_types.size(), 151669u);
  EXPECT_EQ(tokens[0], "!");
  EXPECT_EQ(tokens[151643], "<|endoftext|>");
  EXPECT_EQ(tokens[151644], "<|im_start|>");
  EXPECT_EQ(tokens[151645], "<|im_end|>");
  EXPECT_EQ(tokens[151667], "<think>");
  EXPECT_EQ(tokens[151668], "</think>");
  EXPECT_EQ(merges[0], "\xc4\xa0 \xc4\xa0");  // "Ġ Ġ": two spaces, the most frequent pair
  EXPECT_EQ(token_types[0], 1);               // NORMAL
  EXPECT_EQ(token_types[151643], 3);          // CONTROL
  EXPECT_EQ(file->get_uint("tokenizer.ggml.eos_token_id").value(), 151645u);
  EXPECT_FALSE(file->get_bool("tokenizer.ggml.add_bos_token").value());
  EXPECT_TRUE(file->get_string("tokenizer.chat_template").value().starts_with("{%- if tools %}"));
  EXPECT_EQ(file->describe("tokenizer.ggml.tokens"),
            "[151669 x string] \"!\", \"\\x22\", \"#\", \"$\", \"%\", \"&\", \"'\", \"(\", ...");
}

// A file with one key of every type, built byte by byte.
std::vector<uint8_t> every_type_file() {
  GgufBytes b;
  b.header(0, 19)
      .kv<uint8_t>("u8", 0, 255)
      .kv<int8_t>("i8", 1, -1)
      .kv<uint16_t>("u16", 2, 65535)
      .kv<int16_t>("i16", 3, -32768)
      .kv<uint32_t>("u32", 4, 4000000000u)
      .kv<int32_t>("i32", 5, -7)
      .kv<float>("f32", 6, 0.5f)
      .kv<uint8_t>("bool", 7, 1)
      .kv_string("str", "qwen3moe")
      .kv<uint64_t>("u64", 10, std::numeric_limits<uint64_t>::max())
      .kv<int64_t>("i64", 11, std::numeric_limits<int64_t>::min())
      .kv<double>("f64", 12, 1e-300)
      .kv_array<int16_t>("i16s", 3, {-1, 2, -3})
      .kv_array<uint64_t>("u64s", 10, {1, std::numeric_limits<uint64_t>::max()})
      .kv_array<float>("f32s", 6, {1.5f, -2.0f})
      .kv_array<double>("f64s", 12, {0.25, 1e40})
      .kv_array<uint8_t>("bools", 7, {0, 1, 1})
      .kv_string_array("strs", {"a", "", "b\nc"})
      .kv_string_array("empty", {});
  return b.bytes();
}

TEST(GgufMetadata, EveryValueType) {
  const auto bytes = every_type_file();
  const auto parsed = GgufFile::parse(bytes, "mem.gguf");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const GgufFile& file = *parsed.value();
  EXPECT_EQ(file.keys().size(), 19u);
  EXPECT_EQ(file.keys()[8], "str");
  EXPECT_EQ(file.get_uint("u8").value(), 255u);
  EXPECT_EQ(file.get_int("i8").value(), -1);
  EXPECT_EQ(file.get_uint("u16").value(), 65535u);
  EXPECT_EQ(file.get_int("i16").value(), -32768);
  EXPECT_EQ(file.get_uint("u32").value(), 4000000000u);
  EXPECT_EQ(file.get_int("u32").value(), 4000000000);
  EXPECT_EQ(file.get_int("i32").value(), -7);
  EXPECT_EQ(file.get_float("f32").value(), 0.5);
  EXPECT_TRUE(file.get_bool("bool").value());
  EXPECT_EQ(file.get_string("str").value(), "qwen3moe");
  EXPECT_EQ(file.get_uint("u64").value(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(file.get_int("i64").value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(file.get_float("f64").value(), 1e-300);
  EXPECT_EQ(file.get_int_array("i16s").value(), (std::vector<int64_t>{-1, 2, -3}));
  EXPECT_EQ(file.get_float_array("f32s").value(), (std::vector<float>{1.5f, -2.0f}));
  const auto f64s = file.get_float_array("f64s").value();
  EXPECT_EQ(f64s[0], 0.25f);
  EXPECT_TRUE(std::isinf(f64s[1]));  // 1e40 does not fit a float
  EXPECT_EQ(file.get_string_array("strs").value(), (std::vector<std::string>{"a", "", "b\nc"}));
  EXPECT_TRUE(file.get_string_array("empty").value().empty());
  EXPECT_EQ(file.type_of("bools").value(), ValueType::kArray);
  EXPECT_EQ(file.type_of("f64").value(), ValueType::kFloat64);
  EXPECT_TRUE(file.has("u8"));
  EXPECT_FALSE(file.has("u9"));
}

TEST(GgufMetadata, GetterErrorsNameFileKeyAndTypes) {
  const auto bytes = every_type_file();
  const auto file = GgufFile::parse(bytes, "mem.gguf").value();
  EXPECT_EQ(file->get_uint("str").status().message(),
            "mem.gguf: key str: expected an unsigned integer, found string");
  EXPECT_EQ(file->get_int("f32").status().message(),
            "mem.gguf: key f32: expected an integer, found float32");
  EXPECT_EQ(file->get_uint("i8").status().message(),
            "mem.gguf: key i8: expected an unsigned integer, found -1");
  EXPECT_EQ(file->get_int("u64").status().message(),
            "mem.gguf: key u64: value 18446744073709551615 does not fit in int64");
  EXPECT_EQ(file->get_int_array("u64s").status().message(),
            "mem.gguf: key u64s: element 1 = 18446744073709551615 does not fit in int64");
  EXPECT_EQ(file->get_float("u32").status().message(),
            "mem.gguf: key u32: expected a float, found uint32");
  EXPECT_EQ(file->get_bool("u8").status().message(),
            "mem.gguf: key u8: expected a bool, found uint8");
  EXPECT_EQ(file->get_string("strs").status().message(),
            "mem.gguf: key strs: expected a string, found array of string");
  EXPECT_EQ(file->get_string_array("i16s").status().message(),
            "mem.gguf: key i16s: expected an array of strings, found array of int16");
  EXPECT_EQ(file->get_float_array("i16s").status().message(),
            "mem.gguf: key i16s: expected an array of floats, found array of int16");
  EXPECT_EQ(file->get_int_array("f32s").status().message(),
            "mem.gguf: key f32s: expected an array of integers, found array of float32");
  EXPECT_EQ(file->get_string("nope").status().message(), "mem.gguf: key nope: missing");
  EXPECT_EQ(file->type_of("nope").status().message(), "mem.gguf: key nope: missing");
}

TEST(GgufMetadata, Describe) {
  const auto bytes = every_type_file();
  const auto file = GgufFile::parse(bytes, "mem.gguf").value();
  EXPECT_EQ(file->describe("i8"), "-1");
  EXPECT_EQ(file->describe("u64"), "18446744073709551615");
  EXPECT_EQ(file->describe("f32"), "0.5");
  EXPECT_EQ(file->describe("bool"), "true");
  EXPECT_EQ(file->describe("str"), "\"qwen3moe\"");
  EXPECT_EQ(file->describe("i16s"), "[3 x int16] -1, 2, -3");
  EXPECT_EQ(file->describe("bools"), "[3 x bool] false, true, true");
  EXPECT_EQ(file->describe("strs"), "[3 x string] \"a\", \"\", \"b\\x0ac\"");
  EXPECT_EQ(file->describe("empty"), "[0 x string] ");
  EXPECT_EQ(file->describe("nope"), "(missing)");
}

TEST(GgufTensors, OffsetsAbsoluteSizesFromTypeTable) {
  GgufBytes b;
  b.header(3, 1, /*version=*/2).kv<uint32_t>("general.alignment", 4, 64);
  b.tensor_info("a", {64, 3}, 2, 0);         // Q4_0: 2 blocks of 18 bytes per row, 3 rows
  b.tensor_info("b", {256, 2, 2}, 12, 128);  // Q4_K: 144 bytes per row, 4 rows
  b.tensor_info("empty", {0, 5}, 0, 704);
  b.pad_to(64);
  const uint64_t data_offset = b.size();
  b.zeros(704);
  const auto parsed = GgufFile::parse(b.span(), "t.gguf");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const GgufFile& file = *parsed.value();
  EXPECT_EQ(file.version(), 2u);
  EXPECT_EQ(file.alignment(), 64u);
  EXPECT_EQ(file.data_offset(), data_offset);
  const TensorInfo* a = file.find_tensor("a");
  const TensorInfo* q4k = file.find_tensor("b");
  ASSERT_TRUE(a && q4k);
  EXPECT_EQ(a->offset, data_offset);
  EXPECT_EQ(a->n_bytes, 108u);
  EXPECT_EQ(a->n_elements(), 192);
  EXPECT_EQ(q4k->offset, data_offset + 128);
  EXPECT_EQ(q4k->n_bytes, 576u);
  EXPECT_EQ(file.find_tensor("empty")->n_bytes, 0u);
  EXPECT_EQ(file.tensor_data(*q4k), b.span().data() + data_offset + 128);
  EXPECT_EQ(file.find_tensor("c"), nullptr);
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("gguf_file_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

using MappedFileTest = TempDir;

TEST_F(MappedFileTest, ErrorsNameTheFile) {
  const std::string missing = (dir_ / "nope.gguf").string();
  EXPECT_EQ(MappedFile::open(missing).status().message(),
            missing + ": cannot open: No such file or directory");
  EXPECT_EQ(GgufFile::open(missing).status().message(),
            missing + ": cannot open: No such file or directory");
  EXPECT_EQ(MappedFile::open(dir_.string()).status().message(), dir_.string() + ": is a directory");
}

TEST_F(MappedFileTest, EmptyAndSmallFiles) {
  const std::string empty = (dir_ / "empty.gguf").string();
  std::ofstream(empty).close();
  const auto mapped = MappedFile::open(empty);
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ(mapped.value()->size(), 0u);
  EXPECT_EQ(GgufFile::open(empty).status().message(), empty + ": not a GGUF file: only 0 bytes");

  const std::string small = (dir_ / "small.gguf").string();
  std::ofstream(small, std::ios::binary) << "GGUF";
  const auto mapped_small = MappedFile::open(small);
  ASSERT_TRUE(mapped_small.ok());
  const auto bytes = mapped_small.value()->bytes();
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "GGUF");
}

}  // namespace
}  // namespace strata::gguf
