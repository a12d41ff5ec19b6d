// Hostile input: truncated, bit-flipped and hand-corrupted GGUF images. The reader must never
// crash (run these under STRATA_SANITIZE=ON to catch over-reads) and must either accept the
// image or refuse it with one non-empty line that names the file.
#include "gguf/gguf_file.h"

#include "gguf/gguf_test_bytes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

namespace strata::gguf {
namespace {

namespace fs = std::filesystem;
using testing::GgufBytes;

constexpr char kName[] = "x.gguf";
const fs::path kSmallGolden =
    fs::path(STRATA_SOURCE_DIR) / "tests/golden/synthetic/models/tiny-qwen3moe-q4_0.gguf";

std::vector<uint8_t> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Reads everything a consumer could ask for, so the sanitizers see every getter run.
void touch_everything(const GgufFile& file) {
  for (const std::string& key : file.keys()) {
    (void)file.describe(key);
    (void)file.type_of(key);
    (void)file.get_uint(key);
    (void)file.get_int(key);
    (void)file.get_float(key);
    (void)file.get_bool(key);
    (void)file.get_string(key);
    (void)file.get_string_array(key);
    (void)file.get_int_array(key);
    (void)file.get_float_array(key);
    (void)file.raw_value(key);
  }
  uint64_t checksum = 0;
  for (const TensorInfo& tensor : file.tensors()) {
    EXPECT_EQ(file.find_tensor(tensor.name), &tensor);
    if (tensor.n_bytes > 0) {
      checksum += file.tensor_data(tensor)[0] + file.tensor_data(tensor)[tensor.n_bytes - 1];
    }
  }
  (void)checksum;
}

// Parses `bytes`; on failure checks the message's form. Returns whether it parsed.
bool parse_checked(std::span<const uint8_t> bytes, const std::string& context) {
  const auto parsed = GgufFile::parse(bytes, kName);
  if (parsed.ok()) {
    touch_everything(*parsed.value());
    return true;
  }
  const std::string message = parsed.status().message();
  EXPECT_TRUE(message.starts_with(std::string(kName) + ": ")) << context << ": " << message;
  EXPECT_GT(message.size(), std::strlen(kName) + 2) << context;
  EXPECT_EQ(message.find_first_of("\n\r"), std::string::npos) << context << ": " << message;
  return false;
}

uint64_t data_end(const GgufFile& file) {
  uint64_t end = 0;
  for (const TensorInfo& tensor : file.tensors())
    end = std::max(end, tensor.offset + tensor.n_bytes);
  return end;
}

TEST(GgufHostile, TruncatedAnywhere) {
  const std::vector<uint8_t> full = read_file(kSmallGolden);
  const auto reference = GgufFile::parse(full, kName);
  ASSERT_TRUE(reference.ok());
  const uint64_t header_end = reference.value()->data_offset();
  const uint64_t tensors_end = data_end(*reference.value());
  std::vector<uint64_t> cuts;
  for (uint64_t cut = 0; cut <= header_end; ++cut) cuts.push_back(cut);
  std::mt19937_64 rng(11);
  for (int i = 0; i < 200; ++i) cuts.push_back(header_end + rng() % (full.size() - header_end));
  for (const TensorInfo& tensor : reference.value()->tensors()) {
    cuts.push_back(tensor.offset + tensor.n_bytes - 1);
    cuts.push_back(tensor.offset + tensor.n_bytes);
  }
  for (const uint64_t cut : cuts) {
    // An exact-size copy, so a read past the cut is a heap overflow the sanitizer reports.
    const std::vector<uint8_t> prefix(full.begin(), full.begin() + cut);
    const bool ok = parse_checked(prefix, fmt::format("cut at {}", cut));
    EXPECT_EQ(ok, cut >= tensors_end) << "cut at " << cut;
  }
}

// Flips bits and overwrites bytes inside the header of a real file, one mutation at a time
// (the fuzz target explores further; this keeps the unit test at about a second).
TEST(GgufHostile, BitFlipsAndByteStompsInTheHeader) {
  std::vector<uint8_t> image = read_file(kSmallGolden);
  const uint64_t header_end = GgufFile::parse(image, kName).value()->data_offset();
  std::mt19937_64 rng(12);
  int accepted = 0;
  constexpr int kMutations = 10000;
  for (int i = 0; i < kMutations; ++i) {
    const uint64_t pos = rng() % header_end;
    const uint8_t saved = image[pos];
    image[pos] = (i % 2 == 0) ? uint8_t(saved ^ (1u << (rng() % 8))) : uint8_t(rng());
    accepted += parse_checked(image, fmt::format("mutation {} at {}", i, pos));
    image[pos] = saved;
  }
  // Most flips land in string bytes and values, which stay valid; many do not.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, kMutations);
}

// A small file with every value type and a few tensors, mutated several bytes at a time.
TEST(GgufHostile, MultiByteMutationsOfASmallFile) {
  GgufBytes b;
  b.header(3, 7)
      .kv<uint32_t>("general.alignment", 4, 32)
      .kv_string("s", "text")
      .kv<double>("f", 12, 2.5)
      .kv<uint8_t>("b", 7, 1)
      .kv_array<int32_t>("ids", 5, {1, -2, 3})
      .kv_array<float>("fs", 6, {0.5f})
      .kv_string_array("strs", {"a", "bc", ""});
  b.tensor_info("a", {32, 2}, 8, 0).tensor_info("b", {4}, 0, 96).tensor_info("c", {256}, 12, 128);
  b.pad_to(32).zeros(128 + 144);
  const std::vector<uint8_t> original = b.bytes();
  ASSERT_TRUE(GgufFile::parse(original, kName).ok());
  std::mt19937_64 rng(13);
  for (int i = 0; i < 30000; ++i) {
    std::vector<uint8_t> image = original;
    const int n_changes = 1 + int(rng() % 4);
    for (int c = 0; c < n_changes; ++c) image[rng() % image.size()] = uint8_t(rng());
    if (rng() % 4 == 0) image.resize(rng() % image.size());
    parse_checked(image, fmt::format("mutation {}", i));
  }
}

std::string parse_error(const GgufBytes& b) {
  const auto parsed = GgufFile::parse(b.span(), kName);
  return parsed.ok() ? "(parsed)" : parsed.status().message();
}

// One tensor "a" of `shape` and `type` at `offset`, with `data_bytes` of data after the padding.
GgufBytes one_tensor(std::initializer_list<int64_t> shape, uint32_t type, uint64_t offset,
                     uint64_t data_bytes) {
  GgufBytes b;
  b.header(1, 0).tensor_info("a", shape, type, offset).pad_to(32).zeros(data_bytes);
  return b;
}

TEST(GgufHostile, HeaderErrors) {
  GgufBytes magic;
  magic.header(0, 0).bytes()[3] = 'X';
  EXPECT_EQ(parse_error(magic), "x.gguf: not a GGUF file: starts with \"GGUX\", not \"GGUF\"");
  EXPECT_EQ(parse_error(GgufBytes().u32(0x46554747)),
            "x.gguf: truncated at offset 4: the version needs 4 bytes, 0 left");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 0, 1)),
            "x.gguf: unsupported GGUF version 1 (Strata reads versions 2 and 3)");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 0, 4)),
            "x.gguf: unsupported GGUF version 4 (Strata reads versions 2 and 3)");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 0, 0x03000000)),
            "x.gguf: unsupported GGUF version 50331648, a big-endian file (Strata reads "
            "versions 2 and 3)");
  EXPECT_EQ(parse_error(GgufBytes().header(1ull << 63, 0).zeros(100)),
            "x.gguf: header claims 9223372036854775808 tensors, more than the 100 bytes after "
            "it hold");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 1ull << 62).zeros(100)),
            "x.gguf: header claims 4611686018427387904 metadata entries, more than the 100 "
            "bytes after it hold");
  EXPECT_EQ(parse_error(GgufBytes().header(2'000'000, 3).zeros(64'000'000)),
            "x.gguf: header claims 3 metadata entries and 2000000 tensors; the limit is 1048576 "
            "each");
  EXPECT_TRUE(GgufFile::parse(GgufBytes().header(0, 0, 2).span(), kName).ok());
}

TEST(GgufHostile, MetadataErrors) {
  EXPECT_EQ(parse_error(GgufBytes().header(0, 1).u64(1ull << 62).zeros(20)),
            "x.gguf: truncated at offset 24: key 0 of 4611686018427387904 bytes, 20 left");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 1).str("k").u32(8).u64(1ull << 62).zeros(8)),
            "x.gguf: truncated at offset 37: the value of key k of 4611686018427387904 bytes, "
            "8 left");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 1).str("k").u32(9).u32(4).u64(1ull << 60).zeros(8)),
            "x.gguf: truncated at offset 41: array k of 1152921504606846976 uint32 elements, 8 "
            "bytes left");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 1).str("k").u32(9).u32(8).u64(1ull << 61).zeros(16)),
            "x.gguf: truncated at offset 41: array k of 2305843009213693952 string elements, "
            "16 bytes left");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 1).str("k").u32(13).zeros(8)),
            "x.gguf: key k: unknown value type 13");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 1).str("k").u32(9).u32(13).u64(0)),
            "x.gguf: key k: unknown array element type 13");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 1).str("k").u32(9).u32(9).u64(1).zeros(12)),
            "x.gguf: key k: arrays of arrays are not supported");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 2).kv<uint8_t>("k", 0, 1).kv<uint8_t>("k", 0, 2)),
            "x.gguf: duplicate key k");
  EXPECT_EQ(
      parse_error(GgufBytes().header(0, 2).kv<uint8_t>("a\nb", 0, 1).kv<uint8_t>("a\nb", 0, 1)),
      "x.gguf: duplicate key a\\x0ab");
}

TEST(GgufHostile, AlignmentErrors) {
  for (const uint32_t alignment : {0u, 3u, 48u}) {
    EXPECT_EQ(parse_error(GgufBytes().header(0, 1).kv<uint32_t>("general.alignment", 4, alignment)),
              fmt::format("x.gguf: general.alignment must be a non-zero power of two, found {}",
                          alignment));
  }
  EXPECT_EQ(parse_error(GgufBytes().header(0, 1).kv<int32_t>("general.alignment", 5, -32)),
            "x.gguf: general.alignment must be a non-zero power of two, found -32");
  EXPECT_EQ(parse_error(GgufBytes().header(0, 1).kv_string("general.alignment", "32")),
            "x.gguf: general.alignment must be an integer, found string");
}

TEST(GgufHostile, TensorErrors) {
  EXPECT_EQ(parse_error(one_tensor({32, 1, 1, 1, 1}, 0, 0, 128)),
            "x.gguf: tensor a: 5 dimensions, expected 1 to 4");
  GgufBytes no_dims;
  no_dims.header(1, 0).str("a").u32(0).u32(0).u64(0).pad_to(32);
  EXPECT_EQ(parse_error(no_dims), "x.gguf: tensor a: 0 dimensions, expected 1 to 4");
  EXPECT_EQ(parse_error(one_tensor({32}, 77, 0, 128)), "x.gguf: tensor a: unknown tensor type 77");
  EXPECT_EQ(parse_error(one_tensor({4}, 4, 0, 128)), "x.gguf: tensor a: unknown tensor type 4");
  EXPECT_EQ(parse_error(one_tensor({32, -2}, 0, 0, 128)),
            "x.gguf: tensor a: dimension 1 is negative (-2)");
  EXPECT_EQ(parse_error(one_tensor({48}, 2, 0, 128)),
            "x.gguf: tensor a: row length 48 is not a multiple of the Q4_0 block size 32");
  EXPECT_EQ(parse_error(one_tensor({1ll << 32, 1ll << 31, 2}, 0, 0, 128)),
            "x.gguf: tensor a: shape [4294967296, 2147483648, 2] has more elements or bytes "
            "than fit in int64");
  EXPECT_EQ(parse_error(one_tensor({1ll << 62}, 0, 0, 128)),
            "x.gguf: tensor a: shape [4611686018427387904] has more elements or bytes than fit "
            "in int64");
  EXPECT_EQ(parse_error(one_tensor({32}, 0, 16, 256)),
            "x.gguf: tensor a: offset 16 is not a multiple of the alignment 32");
  EXPECT_EQ(parse_error(one_tensor({32}, 0, ~uint64_t(31), 256)),
            "x.gguf: tensor a: offset 18446744073709551584 is past end of file");
  EXPECT_EQ(parse_error(one_tensor({32}, 0, 0, 100)),
            "x.gguf: tensor a: data ends 28 bytes past end of file");

  GgufBytes past_end;
  past_end.header(1, 0).tensor_info("blk.3.ffn_up_exps", {256, 16}, 0, 0).pad_to(32);
  past_end.zeros(16384 - 4096);
  EXPECT_EQ(parse_error(past_end),
            "x.gguf: tensor blk.3.ffn_up_exps: data ends 4096 bytes past end of file");

  GgufBytes overlap;
  overlap.header(2, 0).tensor_info("a", {32}, 0, 0).tensor_info("b", {8}, 0, 96).pad_to(32);
  overlap.zeros(128);
  EXPECT_EQ(parse_error(overlap),
            fmt::format("x.gguf: tensors a and b overlap (a ends at {0}, b starts at {1})",
                        overlap.size(), overlap.size() - 32));

  GgufBytes duplicate;
  duplicate.header(2, 0).tensor_info("a", {8}, 0, 0).tensor_info("a", {8}, 0, 32).pad_to(32);
  duplicate.zeros(64);
  EXPECT_EQ(parse_error(duplicate), "x.gguf: duplicate tensor name a");

  GgufBytes odd_name;
  odd_name.header(1, 0).tensor_info("\r\n\x80", {32}, 99, 0).pad_to(32);
  EXPECT_EQ(parse_error(odd_name), "x.gguf: tensor \\x0d\\x0a\\x80: unknown tensor type 99");
}

// Empty tensors hold no bytes, so they may sit anywhere, even on top of others.
TEST(GgufHostile, EmptyTensorsNeverOverlap) {
  GgufBytes b;
  b.header(3, 0).tensor_info("a", {32}, 0, 0).tensor_info("e", {0}, 0, 32);
  b.tensor_info("f", {8, 0}, 0, 128).pad_to(32).zeros(128);
  const auto parsed = GgufFile::parse(b.span(), kName);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed.value()->find_tensor("f")->n_bytes, 0u);
}

}  // namespace
}  // namespace strata::gguf
