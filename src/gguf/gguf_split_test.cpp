// Split models (gguf_file.h): the parts open as one file equal to the model they were split
// from, and a missing, misnamed or inconsistent part is one clear error naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "gguf/gguf_file.h"
#include "gguf/gguf_split_writer.h"
#include "gguf/gguf_writer.h"

namespace strata::gguf {
namespace {

namespace fs = std::filesystem;

const std::string kSource =
    std::string(STRATA_SOURCE_DIR) + "/tests/golden/synthetic/models/tiny-qwen3moe-f16.gguf";

class SplitModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("gguf_split_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    auto source = GgufFile::open(kSource);
    ASSERT_TRUE(source.ok()) << source.status().message();
    source_ = source.value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> split(const std::string& name, const SplitOptions& options) {
    auto paths = write_split_model(*source_, (dir_ / name).string(), options, nullptr);
    EXPECT_TRUE(paths.ok()) << paths.status().message();
    return paths.ok() ? paths.value() : std::vector<std::string>{};
  }
  std::string open_error(const std::string& path) {
    auto file = GgufFile::open(path);
    EXPECT_FALSE(file.ok());
    return file.ok() ? "" : file.status().message();
  }

  fs::path dir_;
  std::shared_ptr<const GgufFile> source_;
};

TEST_F(SplitModelTest, PartsOpenAsTheModelTheyWereSplitFrom) {
  uint64_t largest_tensor = 0;
  for (const TensorInfo& tensor : source_->tensors())
    largest_tensor = std::max(largest_tensor, tensor.n_bytes);
  for (const SplitOptions options : {SplitOptions{.n_parts = 3}, SplitOptions{.n_parts = 2},
                                     SplitOptions{.n_parts = 2, .metadata_only_first_part = true},
                                     SplitOptions{.max_part_bytes = largest_tensor}}) {
    SCOPED_TRACE(fmt::format("{} parts, at most {} bytes{}", options.n_parts,
                             options.max_part_bytes,
                             options.metadata_only_first_part ? ", first without tensors" : ""));
    const auto paths = split(fmt::format("model-{}-{}", options.n_parts, options.max_part_bytes) +
                                 (options.metadata_only_first_part ? "-m" : ""),
                             options);
    if (options.n_parts > 0) {
      ASSERT_EQ(paths.size(), size_t(options.n_parts + options.metadata_only_first_part));
    } else {
      ASSERT_GT(paths.size(), 2u);
    }
    auto opened = GgufFile::open(paths[0]);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    const GgufFile& joined = *opened.value();
    EXPECT_EQ(joined.name(), paths[0]);
    EXPECT_EQ(joined.keys(), source_->keys());  // the split.* keys left out
    for (const std::string& key : source_->keys())
      EXPECT_EQ(joined.describe(key), source_->describe(key)) << key;
    ASSERT_EQ(joined.tensors().size(), source_->tensors().size());
    for (size_t t = 0; t < joined.tensors().size(); ++t) {
      const TensorInfo& got = joined.tensors()[t];
      const TensorInfo& want = source_->tensors()[t];
      ASSERT_EQ(got.name, want.name);
      EXPECT_EQ(got.shape, want.shape);
      EXPECT_EQ(got.type_id, want.type_id);
      ASSERT_EQ(got.n_bytes, want.n_bytes);
      EXPECT_EQ(std::memcmp(joined.tensor_data(got), source_->tensor_data(want), got.n_bytes), 0)
          << got.name;
      EXPECT_EQ(joined.find_tensor(got.name), &got);
    }
    ASSERT_EQ(joined.parts().size(), paths.size());
    uint64_t part_bytes = 0;
    for (const std::string& path : paths) part_bytes += fs::file_size(path);
    EXPECT_EQ(joined.file_size(), part_bytes);
    for (size_t p = 0; p < paths.size(); ++p) {
      const FilePart& part = joined.parts()[p];
      EXPECT_EQ(part.path, paths[p]);
      EXPECT_EQ(part.size, fs::file_size(paths[p]));
      EXPECT_EQ(part.offset % kFilePartSpacing, 0u);
      if (p > 0) {
        EXPECT_GE(part.offset, joined.parts()[p - 1].offset + joined.parts()[p - 1].size);
      }
      // Each part's own bytes sit at its offset: its header starts there.
      EXPECT_EQ(std::memcmp(joined.bytes().data() + part.offset, "GGUF", 4), 0);
      auto alone = GgufFile::parse(joined.bytes().subspan(part.offset, part.size), part.path);
      ASSERT_TRUE(alone.ok()) << alone.status().message();
      uint64_t tensor_bytes = 0;
      for (const TensorInfo& tensor : alone.value()->tensors()) tensor_bytes += tensor.n_bytes;
      if (options.max_part_bytes > 0) {
        EXPECT_LE(tensor_bytes, options.max_part_bytes);
      }
      EXPECT_EQ(alone.value()->tensors().empty(), p == 0 && options.metadata_only_first_part);
    }
  }
}

TEST_F(SplitModelTest, OneFileIsItsOwnOnlyPart) {
  ASSERT_EQ(source_->parts().size(), 1u);
  EXPECT_EQ(source_->parts()[0].path, kSource);
  EXPECT_EQ(source_->parts()[0].offset, 0u);
  EXPECT_EQ(source_->parts()[0].size, fs::file_size(kSource));
}

TEST_F(SplitModelTest, MissingOrMisnamedPartsAreOneClearError) {
  const auto paths = split("model", {.n_parts = 3});
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[2], (dir_ / "model-00003-of-00003.gguf").string());
  EXPECT_EQ(open_error(paths[1]),
            paths[1] + ": part 2 of a model split in 3 files: open the first part");

  const std::string renamed = (dir_ / "renamed.gguf").string();
  fs::copy_file(paths[0], renamed);
  EXPECT_EQ(open_error(renamed), renamed +
                                     ": the first of 3 parts of a split model, but its name does "
                                     "not end in -00001-of-00003.gguf, so the other parts cannot "
                                     "be found");

  fs::rename(paths[2], dir_ / "aside.gguf");
  EXPECT_EQ(open_error(paths[0]), paths[2] + ": cannot open: No such file or directory");

  // Parts 2 and 3 swapped: part 2's file says it is the third.
  fs::rename(paths[1], paths[2]);
  fs::rename(dir_ / "aside.gguf", paths[1]);
  EXPECT_EQ(open_error(paths[0]),
            paths[1] + ": key split.no is 2, but the file is part 2 of 3 (expected 1)");
}

TEST_F(SplitModelTest, WriterRefusesBadRequestsAndExistingParts) {
  const std::string prefix = (dir_ / "m").string();
  const auto error = [&](const SplitOptions& options) {
    auto paths = write_split_model(*source_, prefix, options, nullptr);
    EXPECT_FALSE(paths.ok());
    return paths.ok() ? "" : paths.status().message();
  };
  EXPECT_EQ(error({}), "split: give either a maximum part size or a number of parts");
  EXPECT_EQ(error({.max_part_bytes = 1, .n_parts = 2}),
            "split: give either a maximum part size or a number of parts");
  EXPECT_EQ(error({.n_parts = int(source_->tensors().size()) + 1}),
            fmt::format("{}: {} parts for {} tensors: a part would hold none", kSource,
                        source_->tensors().size() + 1, source_->tensors().size()));
  ASSERT_EQ(split("m", {.n_parts = 2}).size(), 2u);
  EXPECT_EQ(error({.n_parts = 2}), split_part_path(prefix, 1, 2) + ": exists; --force replaces it");
  EXPECT_EQ(split("m", {.n_parts = 2, .overwrite = true}).size(), 2u);
}

// A part written by hand: its split keys as given, and F32 tensors of 8 values named `names`.
void write_part(const std::string& path, int number, int count, int tensors_count,
                const std::vector<std::string>& names) {
  GgufWriter writer(path);
  if (number == 0) writer.set_string("general.architecture", "test");
  writer.set_uint16(kSplitNoKey, uint16_t(number));
  writer.set_uint16(kSplitCountKey, uint16_t(count));
  writer.set_int32(kSplitTensorsKey, tensors_count);
  for (const std::string& name : names) ASSERT_TRUE(writer.add_tensor(name, {8}, 0).ok());
  ASSERT_TRUE(writer.begin().ok());
  const std::vector<uint8_t> zeros(32);
  for (size_t i = 0; i < names.size(); ++i) ASSERT_TRUE(writer.write_tensor_data(zeros).ok());
  ASSERT_TRUE(writer.finish().ok());
}

TEST_F(SplitModelTest, InconsistentPartsAreOneClearError) {
  const std::string first = (dir_ / "m-00001-of-00002.gguf").string();
  const std::string second = (dir_ / "m-00002-of-00002.gguf").string();

  write_part(first, 0, 2, 2, {"a"});
  write_part(second, 1, 2, 2, {"b"});
  ASSERT_TRUE(GgufFile::open(first).ok());

  write_part(second, 1, 2, 2, {"a"});
  EXPECT_EQ(open_error(first), second + ": tensor a is in part 1 too");

  write_part(second, 1, 2, 2, {"b", "c"});
  EXPECT_EQ(open_error(first),
            first + ": key split.tensors.count is 2, but the 2 parts hold 3 tensors");

  write_part(second, 1, 3, 2, {"b"});
  EXPECT_EQ(open_error(first), second + ": key split.count is 3, but the first part says 2");
}

TEST_F(SplitModelTest, SplitKeysOfTheWrongTypeAreOneClearError) {
  const std::string path = (dir_ / "m-00001-of-00002.gguf").string();
  GgufWriter writer(path);
  writer.set_string(kSplitCountKey, "two");
  ASSERT_TRUE(writer.begin().ok());
  ASSERT_TRUE(writer.finish().ok());
  EXPECT_EQ(open_error(path),
            path + ": key split.count: expected an unsigned integer, found string");
}

// A file that says it is the only part of itself is an ordinary file.
TEST_F(SplitModelTest, OnePartIsAnOrdinaryFile) {
  const std::string path = (dir_ / "m-00001-of-00001.gguf").string();
  write_part(path, 0, 1, 1, {"a"});
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file.value()->parts().size(), 1u);
  EXPECT_NE(file.value()->find_tensor("a"), nullptr);
}

}  // namespace
}  // namespace strata::gguf
