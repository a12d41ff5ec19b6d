#include "gguf/gguf_writer.h"

#include "base/interrupt.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_test_bytes.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

namespace strata::gguf {
namespace {

namespace fs = std::filesystem;
using testing::GgufBytes;

const fs::path kGoldenModels = fs::path(STRATA_SOURCE_DIR) / "tests/golden/synthetic/models";

std::vector<uint8_t> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (auto& b : bytes) b = uint8_t(rng());
  return bytes;
}

class GgufWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("gguf_writer_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Nothing but `expected` may be left in the directory: no temporaries.
  void expect_directory_holds(std::vector<std::string> expected) const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(names, expected);
  }

  fs::path dir_;
};

// The writer's bytes must equal a file assembled field by field from the format description.
TEST_F(GgufWriterTest, MatchesFormatByteForByte) {
  const auto a_data = random_bytes(3 * 18, 1);
  const auto b_data = random_bytes(8 * 4 * 4, 2);  // F32
  GgufWriter writer(path("w.gguf"));
  writer.set_string("general.architecture", "test");
  writer.set_uint32("n", 7);
  writer.set_int32_array("ids", std::vector<int32_t>{-1, 5});
  ASSERT_EQ(writer.add_tensor("a", {32, 3}, 2).value(), 54u);  // Q4_0
  ASSERT_EQ(writer.add_tensor("b", {8, 1, 1, 4}, 0).value(), 128u);
  ASSERT_TRUE(writer.begin().ok());
  ASSERT_TRUE(writer.write_tensor_data(a_data).ok());
  ASSERT_TRUE(writer.write_tensor_data(std::span(b_data).first(100)).ok());
  ASSERT_TRUE(writer.write_tensor_data(std::span(b_data).subspan(100)).ok());
  ASSERT_TRUE(writer.finish().ok());

  GgufBytes expected;
  expected.header(2, 3).kv_string("general.architecture", "test").kv<uint32_t>("n", 4, 7);
  expected.kv_array<int32_t>("ids", 5, {-1, 5});
  expected.tensor_info("a", {32, 3}, 2, 0).tensor_info("b", {8, 1, 1, 4}, 0, 64);
  expected.pad_to(32).raw(a_data).pad_to(32).raw(b_data).pad_to(32);
  EXPECT_EQ(read_file(path("w.gguf")), expected.bytes());
  expect_directory_holds({"w.gguf"});
}

TEST_F(GgufWriterTest, RoundTripsEveryValueType) {
  const std::vector<std::string> strings = {"a", "", "\xc4\xa0the", std::string(300, 'x')};
  GgufWriter writer(path("v.gguf"));
  writer.set_uint8("u8", 200);
  writer.set_int8("i8", -100);
  writer.set_uint16("u16", 60000);
  writer.set_int16("i16", -30000);
  writer.set_uint32("u32", 4000000000u);
  writer.set_int32("i32", -2000000000);
  writer.set_uint64("u64", std::numeric_limits<uint64_t>::max());
  writer.set_int64("i64", std::numeric_limits<int64_t>::min());
  writer.set_float32("f32", 1e-6f);
  writer.set_float64("f64", 1e300);
  writer.set_bool("bool", true);
  writer.set_string("str", "hello\nworld");
  writer.set_uint8_array("u8s", std::vector<uint8_t>{0, 255});
  writer.set_int8_array("i8s", std::vector<int8_t>{-128, 127});
  writer.set_uint16_array("u16s", std::vector<uint16_t>{65535});
  writer.set_int16_array("i16s", std::vector<int16_t>{-32768, 1});
  writer.set_uint32_array("u32s", std::vector<uint32_t>{4294967295u, 0});
  writer.set_int32_array("i32s", std::vector<int32_t>{-5, 6, -7});
  writer.set_uint64_array("u64s", std::vector<uint64_t>{1ull << 62});
  writer.set_int64_array("i64s", std::vector<int64_t>{-(1ll << 62)});
  writer.set_float32_array("f32s", std::vector<float>{0.5f, -3.25f});
  writer.set_float64_array("f64s", std::vector<double>{0.1, -2.5});
  const bool bools[] = {true, false, true};
  writer.set_bool_array("bools", bools);
  writer.set_string_array("strs", strings);
  writer.set_string_array("none", {});
  writer.set_uint8("u8", 201);  // replaces in place, keeping the first position
  ASSERT_TRUE(writer.begin().ok());
  ASSERT_TRUE(writer.finish().ok());

  const auto opened = GgufFile::open(path("v.gguf"));
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  const GgufFile& file = *opened.value();
  EXPECT_EQ(file.keys().size(), 25u);
  EXPECT_EQ(file.keys()[0], "u8");
  EXPECT_EQ(file.type_of("u8").value(), ValueType::kUint8);
  EXPECT_EQ(file.get_uint("u8").value(), 201u);
  EXPECT_EQ(file.type_of("i8").value(), ValueType::kInt8);
  EXPECT_EQ(file.get_int("i8").value(), -100);
  EXPECT_EQ(file.type_of("u16").value(), ValueType::kUint16);
  EXPECT_EQ(file.get_uint("u16").value(), 60000u);
  EXPECT_EQ(file.type_of("i16").value(), ValueType::kInt16);
  EXPECT_EQ(file.get_int("i16").value(), -30000);
  EXPECT_EQ(file.type_of("u32").value(), ValueType::kUint32);
  EXPECT_EQ(file.get_uint("u32").value(), 4000000000u);
  EXPECT_EQ(file.type_of("i32").value(), ValueType::kInt32);
  EXPECT_EQ(file.get_int("i32").value(), -2000000000);
  EXPECT_EQ(file.type_of("u64").value(), ValueType::kUint64);
  EXPECT_EQ(file.get_uint("u64").value(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(file.type_of("i64").value(), ValueType::kInt64);
  EXPECT_EQ(file.get_int("i64").value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(file.type_of("f32").value(), ValueType::kFloat32);
  EXPECT_EQ(file.get_float("f32").value(), 1e-6f);
  EXPECT_EQ(file.type_of("f64").value(), ValueType::kFloat64);
  EXPECT_EQ(file.get_float("f64").value(), 1e300);
  EXPECT_EQ(file.type_of("bool").value(), ValueType::kBool);
  EXPECT_TRUE(file.get_bool("bool").value());
  EXPECT_EQ(file.get_string("str").value(), "hello\nworld");
  EXPECT_EQ(file.get_int_array("u8s").value(), (std::vector<int64_t>{0, 255}));
  EXPECT_EQ(file.get_int_array("i8s").value(), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(file.get_int_array("u16s").value(), (std::vector<int64_t>{65535}));
  EXPECT_EQ(file.get_int_array("i16s").value(), (std::vector<int64_t>{-32768, 1}));
  EXPECT_EQ(file.get_int_array("u32s").value(), (std::vector<int64_t>{4294967295, 0}));
  EXPECT_EQ(file.get_int_array("i32s").value(), (std::vector<int64_t>{-5, 6, -7}));
  EXPECT_EQ(file.get_int_array("u64s").value(), (std::vector<int64_t>{1ll << 62}));
  EXPECT_EQ(file.get_int_array("i64s").value(), (std::vector<int64_t>{-(1ll << 62)}));
  EXPECT_EQ(file.get_float_array("f32s").value(), (std::vector<float>{0.5f, -3.25f}));
  EXPECT_EQ(file.get_float_array("f64s").value(), (std::vector<float>{0.1f, -2.5f}));
  EXPECT_EQ(file.describe("bools"), "[3 x bool] true, false, true");
  EXPECT_EQ(file.describe("u16s"), "[1 x uint16] 65535");
  EXPECT_EQ(file.get_string_array("strs").value(), strings);
  EXPECT_TRUE(file.get_string_array("none").value().empty());
}

// Rewriting a llama.cpp-made file through copy_metadata and the tensor stream reproduces it
// byte for byte: the writer lays files out exactly as ggml does.
TEST_F(GgufWriterTest, RewritesLlamaCppFileIdentically) {
  for (const char* name : {"tiny-qwen3moe-q4_0.gguf", "tiny-qwen3moe-k256-q4_k_m.gguf"}) {
    SCOPED_TRACE(name);
    const auto source = GgufFile::open((kGoldenModels / name).string());
    ASSERT_TRUE(source.ok());
    const GgufFile& file = *source.value();
    GgufWriter writer(path(name));
    for (const std::string& key : file.keys()) ASSERT_TRUE(writer.copy_metadata(file, key).ok());
    for (const TensorInfo& tensor : file.tensors()) {
      ASSERT_EQ(writer.add_tensor(tensor.name, tensor.shape, tensor.type_id).value(),
                tensor.n_bytes);
    }
    ASSERT_TRUE(writer.begin().ok());
    for (const TensorInfo& tensor : file.tensors()) {
      ASSERT_TRUE(writer.write_tensor_data({file.tensor_data(tensor), tensor.n_bytes}).ok());
    }
    ASSERT_TRUE(writer.finish().ok());
    const auto original = file.bytes();
    EXPECT_TRUE(read_file(path(name)) == std::vector<uint8_t>(original.begin(), original.end()));
  }
}

TEST_F(GgufWriterTest, StreamsPiecesWithCustomAlignmentAndEmptyTensors) {
  GgufWriter writer(path("s.gguf"));
  writer.set_alignment(4096);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"big", {1000, 37}}, {"empty", {0, 4}}, {"small", {3}}, {"last", {256, 9}}};
  std::vector<std::vector<uint8_t>> data;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const uint64_t n_bytes = writer.add_tensor(shapes[i].first, shapes[i].second, 0).value();
    data.push_back(random_bytes(n_bytes, uint32_t(i)));
  }
  ASSERT_TRUE(writer.begin().ok());
  std::mt19937 rng(5);
  for (const auto& bytes : data) {
    for (size_t pos = 0; pos < bytes.size();) {
      const size_t n = std::min<size_t>(bytes.size() - pos, rng() % 5000 + 1);
      ASSERT_TRUE(writer.write_tensor_data(std::span(bytes).subspan(pos, n)).ok());
      pos += n;
    }
  }
  ASSERT_TRUE(writer.finish().ok());
  const auto opened = GgufFile::open(path("s.gguf"));
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  const GgufFile& file = *opened.value();
  EXPECT_EQ(file.alignment(), 4096u);
  EXPECT_EQ(file.file_size() % 4096, 0u);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const TensorInfo& tensor = file.tensors()[i];
    EXPECT_EQ(tensor.name, shapes[i].first);
    EXPECT_EQ(tensor.offset % 4096, 0u);
    ASSERT_EQ(tensor.n_bytes, data[i].size());
    // std::equal, not memcmp: the empty tensors' vectors have no data pointer to pass.
    EXPECT_TRUE(std::equal(data[i].begin(), data[i].end(), file.tensor_data(tensor)));
  }
}

TEST_F(GgufWriterTest, RefusesBadTensors) {
  GgufWriter writer(path("t.gguf"));
  const std::string prefix = path("t.gguf") + ": ";
  EXPECT_EQ(writer.add_tensor(std::string(64, 'n'), {32}, 0).status().message(),
            prefix + "tensor " + std::string(64, 'n') + ": name longer than ggml's 63 bytes");
  EXPECT_EQ(writer.add_tensor("x", {32}, 77).status().message(),
            prefix + "tensor x: unknown tensor type 77");
  EXPECT_EQ(writer.add_tensor("x", {100, 2}, 12).status().message(),
            prefix + "tensor x: row length 100 is not a multiple of the Q4_K block size 256");
  EXPECT_EQ(writer.add_tensor("x", {1, 1, 1, 1, 1}, 0).status().message(),
            prefix + "tensor x: 5 dimensions, expected 1 to 4");
  EXPECT_EQ(writer.add_tensor("x", {4, -1}, 0).status().message(),
            prefix + "tensor x: dimension 1 is negative (-1)");
  EXPECT_EQ(writer.add_tensor("x", {1ll << 40, 1ll << 40}, 0).status().message(),
            prefix +
                "tensor x: shape [1099511627776, 1099511627776] has more elements or bytes "
                "than fit in int64");
  ASSERT_TRUE(writer.add_tensor("x", {4}, 0).ok());
  EXPECT_EQ(writer.add_tensor("x", {4}, 0).status().message(), prefix + "duplicate tensor name x");
}

TEST_F(GgufWriterTest, WrongByteCountsAreErrorsAndLeaveNothing) {
  const std::vector<uint8_t> bytes(64);
  {
    GgufWriter writer(path("over.gguf"));
    ASSERT_TRUE(writer.add_tensor("a", {8}, 0).ok());
    ASSERT_TRUE(writer.begin().ok());
    ASSERT_TRUE(writer.write_tensor_data(std::span(bytes).first(20)).ok());
    const Status status = writer.write_tensor_data(std::span(bytes).first(20));
    EXPECT_EQ(status.message(),
              path("over.gguf") + ": tensor a: 40 bytes written, 8 more than its 32");
    EXPECT_EQ(writer.finish().message(), status.message());  // errors stick
  }
  {
    GgufWriter writer(path("after.gguf"));
    ASSERT_TRUE(writer.add_tensor("a", {8}, 0).ok());
    ASSERT_TRUE(writer.begin().ok());
    ASSERT_TRUE(writer.write_tensor_data(std::span(bytes).first(32)).ok());
    EXPECT_EQ(writer.write_tensor_data(std::span(bytes).first(1)).message(),
              path("after.gguf") + ": 1 bytes of tensor data after the last tensor");
  }
  {
    GgufWriter writer(path("under.gguf"));
    ASSERT_TRUE(writer.add_tensor("a", {8}, 0).ok());
    ASSERT_TRUE(writer.add_tensor("b", {8}, 0).ok());
    ASSERT_TRUE(writer.begin().ok());
    ASSERT_TRUE(writer.write_tensor_data(std::span(bytes).first(32)).ok());
    ASSERT_TRUE(writer.write_tensor_data(std::span(bytes).first(31)).ok());
    EXPECT_EQ(writer.finish().message(),
              path("under.gguf") + ": tensor b: 31 of its 32 bytes written");
  }
  {
    GgufWriter writer(path("abandoned.gguf"));
    ASSERT_TRUE(writer.add_tensor("a", {8}, 0).ok());
    ASSERT_TRUE(writer.begin().ok());
    expect_directory_holds({"abandoned.gguf.tmp-" + std::to_string(::getpid())});
  }
  expect_directory_holds({});
}

// After Ctrl-C or SIGTERM the next write fails and removes the temporary: every model writer
// stops between its chunks.
TEST_F(GgufWriterTest, StopsAtAnInterruptAndLeavesNothing) {
  const std::vector<uint8_t> bytes(32);
  GgufWriter writer(path("interrupted.gguf"));
  ASSERT_TRUE(writer.add_tensor("a", {8}, 0).ok());
  ASSERT_TRUE(writer.add_tensor("b", {8}, 0).ok());
  ASSERT_TRUE(writer.begin().ok());
  ASSERT_TRUE(writer.write_tensor_data(bytes).ok());
  install_interrupt_handlers();
  std::raise(SIGINT);
  const Status status = writer.write_tensor_data(bytes);
  clear_interrupt();
  EXPECT_EQ(status.message(), path("interrupted.gguf") + ": interrupted");
  expect_directory_holds({});
  EXPECT_EQ(writer.finish().message(), status.message());
}

TEST_F(GgufWriterTest, IoErrorsNameTheFile) {
  {
    GgufWriter writer(path("missing/x.gguf"));
    const std::string temp = path("missing/x.gguf") + ".tmp-" + std::to_string(::getpid());
    EXPECT_EQ(writer.begin().message(),
              path("missing/x.gguf") + ": cannot create " + temp + ": No such file or directory");
  }
  {
    fs::create_directory(dir_ / "taken");
    GgufWriter writer(path("taken"));
    ASSERT_TRUE(writer.begin().ok());
    const Status status = writer.finish();
    EXPECT_TRUE(status.message().starts_with(path("taken") + ": cannot rename "))
        << status.message();
    expect_directory_holds({"taken"});
    fs::remove(dir_ / "taken");
  }
  {
    // A file size limit makes write() fail with EFBIG, standing in for a full disk.
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit saved;
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
    rlimit limited = saved;
    limited.rlim_cur = 1 << 20;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
    GgufWriter writer(path("full.gguf"));
    ASSERT_TRUE(writer.add_tensor("big", {1 << 20}, 0).ok());
    ASSERT_TRUE(writer.begin().ok());
    const std::vector<uint8_t> bytes(4 << 20);
    const Status status = writer.write_tensor_data(bytes);
    ::setrlimit(RLIMIT_FSIZE, &saved);
    EXPECT_EQ(status.message(), path("full.gguf") + ": cannot write: File too large");
    expect_directory_holds({});
  }
}

}  // namespace
}  // namespace strata::gguf
