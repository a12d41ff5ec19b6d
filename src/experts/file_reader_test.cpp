#include "experts/file_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <random>
#include <tuple>

#include "experts/io_test_support.h"

namespace strata {
namespace {

using testing::AlignedBuffer;
using testing::reference_read;
using testing::TempFile;

// 8 MiB and a bit: the last block of the file is partial, so the zero-filled tail is exercised.
constexpr uint64_t kFileSize = (8u << 20) + 1234;

uint64_t round_up(uint64_t value, uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::unique_ptr<FileReader> open_or_die(const std::string& path, bool direct = true) {
  Result<std::unique_ptr<FileReader>> reader = open_file_reader(path, direct);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  return std::move(reader).value();
}

TEST(FileReaderTest, DirectReaderOnDiskFile) {
  TempFile file(::testing::TempDir(), kFileSize, 1);
  const auto reader = open_or_die(file.path());
  EXPECT_EQ(reader->path(), file.path());
  EXPECT_EQ(reader->size(), kFileSize);
  EXPECT_GE(reader->descriptor(), 0);
  if (!reader->direct()) GTEST_SKIP() << ::testing::TempDir() << " does not take O_DIRECT";
  EXPECT_GE(reader->alignment(), 4096u);
  EXPECT_EQ(reader->alignment() & (reader->alignment() - 1), 0u) << "a power of two";
}

// Random aligned ranges, tail included, against std::ifstream.
void check_random_ranges(FileReader& reader, const std::string& path, uint64_t seed) {
  const size_t alignment = reader.alignment();
  const uint64_t blocks = round_up(reader.size(), alignment) / alignment;
  std::mt19937_64 random(seed);
  for (int i = 0; i < 300; ++i) {
    const uint64_t first = random() % blocks;
    const uint64_t count = 1 + random() % std::min<uint64_t>(blocks - first, 700);
    const uint64_t offset = first * alignment;
    const size_t length = size_t(count * alignment);
    AlignedBuffer buffer(length, 4096, 0xAA);
    ASSERT_TRUE(reader.read(buffer.data(), offset, length).ok()) << offset << " " << length;
    const std::vector<uint8_t> expected = reference_read(path, offset, length);
    ASSERT_EQ(std::memcmp(buffer.data(), expected.data(), expected.size()), 0)
        << "offset " << offset << " length " << length;
    for (size_t j = expected.size(); j < length; ++j) ASSERT_EQ(buffer.data()[j], 0) << j;
  }
}

TEST(FileReaderTest, RandomRangesMatchBufferedStream) {
  TempFile file(::testing::TempDir(), kFileSize, 2);
  const auto reader = open_or_die(file.path());
  check_random_ranges(*reader, file.path(), 3);
}

TEST(FileReaderTest, BufferedReaderReadsAnyRange) {
  TempFile file(::testing::TempDir(), kFileSize, 4);
  const auto reader = open_or_die(file.path(), /*direct=*/false);
  EXPECT_FALSE(reader->direct());
  EXPECT_EQ(reader->alignment(), 1u);
  check_random_ranges(*reader, file.path(), 5);
  std::vector<uint8_t> odd(777);  // an unaligned destination, offset and length
  ASSERT_TRUE(reader->read(odd.data() + 1, 12345, 775).ok());
  const std::vector<uint8_t> expected = reference_read(file.path(), 12345, 775);
  EXPECT_EQ(std::memcmp(odd.data() + 1, expected.data(), 775), 0);
}

TEST(FileReaderTest, FallsBackToBufferedWhereODirectIsRefused) {
  // procfs refuses O_DIRECT at open (EINVAL), as tmpfs did before Linux 6.6.
  const std::string path = "/proc/self/status";
  const auto reader = open_or_die(path);
  EXPECT_FALSE(reader->direct());
  EXPECT_EQ(reader->alignment(), 1u);
}

TEST(FileReaderTest, TmpfsFileReadsCorrectly) {
  struct stat st;
  if (::stat("/dev/shm", &st) != 0) GTEST_SKIP() << "no /dev/shm";
  TempFile file("/dev/shm", kFileSize, 6);
  const auto reader = open_or_die(file.path());
  // Before Linux 6.6 tmpfs refuses O_DIRECT (the fallback); later kernels accept it.
  std::cout << "tmpfs: direct() = " << reader->direct() << ", alignment " << reader->alignment()
            << "\n";
  EXPECT_EQ(reader->direct(), reader->alignment() > 1);
  check_random_ranges(*reader, file.path(), 7);
}

TEST(FileReaderTest, RefusesMisalignedReads) {
  TempFile file(::testing::TempDir(), kFileSize, 8);
  const auto reader = open_or_die(file.path());
  if (!reader->direct()) GTEST_SKIP() << "buffered reads have no alignment";
  const size_t a = reader->alignment();
  AlignedBuffer buffer(4 * a);
  const std::string cause = fmt::format("destination, offset or length not aligned to {} bytes", a);
  const Status bad_offset = reader->read(buffer.data(), 100, a);
  ASSERT_FALSE(bad_offset.ok());
  EXPECT_EQ(bad_offset.message(),
            fmt::format("{}: read of {} bytes at offset 100: {}", file.path(), a, cause));
  const Status bad_length = reader->read(buffer.data(), a, 100);
  ASSERT_FALSE(bad_length.ok());
  EXPECT_EQ(bad_length.message(),
            fmt::format("{}: read of 100 bytes at offset {}: {}", file.path(), a, cause));
  const Status bad_destination = reader->read(buffer.data() + 512, 0, a);
  ASSERT_FALSE(bad_destination.ok());
  EXPECT_EQ(bad_destination.message(),
            fmt::format("{}: read of {} bytes at offset 0: {}", file.path(), a, cause));
}

TEST(FileReaderTest, TailReadsAsZerosButNotFurther) {
  TempFile file(::testing::TempDir(), kFileSize, 9);
  const auto reader = open_or_die(file.path());
  const size_t a = reader->alignment();
  const uint64_t end = round_up(kFileSize, a);
  AlignedBuffer buffer(2 * a, 4096, 0xAA);
  const uint64_t last = end - a;
  ASSERT_TRUE(reader->read(buffer.data(), last, a).ok());
  const std::vector<uint8_t> expected = reference_read(file.path(), last, a);
  ASSERT_EQ(expected.size(), kFileSize - last);
  EXPECT_EQ(std::memcmp(buffer.data(), expected.data(), expected.size()), 0);
  for (size_t j = expected.size(); j < a; ++j) ASSERT_EQ(buffer.data()[j], 0);

  const Status past = reader->read(buffer.data(), last, 2 * a);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.message(), fmt::format("{}: read of {} bytes at offset {}: past end of file "
                                        "({} bytes)",
                                        file.path(), 2 * a, last, kFileSize));
}

TEST(FileReaderTest, FileThatShrankGivesShortRead) {
  TempFile file(::testing::TempDir(), kFileSize, 10);
  const auto reader = open_or_die(file.path());
  const size_t block = std::max<size_t>(reader->alignment(), 4096);
  // Cut the file 100 bytes into a block in the middle of the range read below.
  const uint64_t offset = 64 * block;
  ASSERT_EQ(::truncate(file.path().c_str(), off_t(offset + 3 * block + 100)), 0);
  AlignedBuffer buffer(8 * block);
  const Status status = reader->read(buffer.data(), offset, 8 * block);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            fmt::format("{}: read of {} bytes at offset {}: short read, {} of {} bytes",
                        file.path(), 8 * block, offset, 3 * block + 100, 8 * block));
  // A read starting past the new end gets nothing at all.
  const Status nothing = reader->read(buffer.data(), offset + 4 * block, block);
  ASSERT_FALSE(nothing.ok());
  EXPECT_EQ(nothing.message(),
            fmt::format("{}: read of {} bytes at offset {}: short read, 0 of {} bytes", file.path(),
                        block, offset + 4 * block, block));
}

TEST(FileReaderTest, OpenErrorsNameTheFile) {
  const std::string missing = ::testing::TempDir() + "/strata_no_such_file";
  Result<std::unique_ptr<FileReader>> reader = open_file_reader(missing);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().message(), missing + ": cannot open: No such file or directory");
  Result<std::unique_ptr<FileReader>> directory = open_file_reader("/");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().message(), "/: is a directory");
}

// read_fully() against a scripted pread: a list of what each call returns.
struct ScriptedPread {
  std::vector<uint8_t> file;
  std::vector<ssize_t> script;  // byte counts to deliver; -1 = fail with `error`
  int error = EINTR;
  size_t calls = 0;

  ssize_t operator()(void* destination, size_t length, uint64_t offset) {
    const ssize_t step = calls < script.size() ? script[calls] : ssize_t(length);
    ++calls;
    if (step < 0) {
      errno = error;
      return -1;
    }
    const size_t n = std::min({size_t(step), length, size_t(file.size() - offset)});
    std::memcpy(destination, file.data() + offset, n);
    return ssize_t(n);
  }
};

std::vector<uint8_t> pattern(size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = uint8_t(i * 131 + 7);
  return bytes;
}

TEST(ReadFullyTest, RetriesPartialReadsAndInterrupts) {
  ScriptedPread pread{.file = pattern(8192), .script = {1000, -1, 3000, -1, -1, 1}};
  std::vector<uint8_t> out(8192);
  const Status status = read_fully(
      "f", [&](void* d, size_t n, uint64_t o) { return pread(d, n, o); }, out.data(), 0, 8192, 8192,
      1);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(out, pread.file);
  EXPECT_EQ(pread.calls, 7u);  // six scripted calls, then the rest in one
}

TEST(ReadFullyTest, ReportsErrnoWithOffsetAndLength) {
  ScriptedPread pread{.file = pattern(8192), .script = {4096, -1}, .error = EIO};
  std::vector<uint8_t> out(8192);
  const Status status = read_fully(
      "m.gguf", [&](void* d, size_t n, uint64_t o) { return pread(d, n, o); }, out.data(), 0, 8192,
      8192, 4096);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "m.gguf: read of 8192 bytes at offset 0: Input/output error");
}

TEST(ReadFullyTest, EndOfFileBeforeExpectedIsShortRead) {
  ScriptedPread pread{.file = pattern(3000)};
  std::vector<uint8_t> out(8192);
  const Status status = read_fully(
      "m.gguf", [&](void* d, size_t n, uint64_t o) { return pread(d, n, o); }, out.data(), 0, 8192,
      8192, 1);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "m.gguf: read of 8192 bytes at offset 0: short read, 3000 of 8192 bytes");
}

TEST(ReadFullyTest, UnalignedPartialReadIsShortReadForDirectIo) {
  // O_DIRECT would refuse the retry at offset 3000 (EINVAL); the loop must not make it.
  ScriptedPread pread{.file = pattern(8192), .script = {3000}};
  std::vector<uint8_t> out(8192);
  const Status status = read_fully(
      "m.gguf", [&](void* d, size_t n, uint64_t o) { return pread(d, n, o); }, out.data(), 0, 8192,
      8192, 4096);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "m.gguf: read of 8192 bytes at offset 0: short read, 3000 of 8192 bytes");
  EXPECT_EQ(pread.calls, 1u);
}

TEST(ReadFullyTest, ZeroFillsPastExpected) {
  ScriptedPread pread{.file = pattern(5000)};
  std::vector<uint8_t> out(8192, 0xAA);
  ASSERT_TRUE(read_fully(
                  "f", [&](void* d, size_t n, uint64_t o) { return pread(d, n, o); }, out.data(), 0,
                  8192, 5000, 4096)
                  .ok());
  EXPECT_EQ(std::memcmp(out.data(), pread.file.data(), 5000), 0);
  for (size_t i = 5000; i < 8192; ++i) ASSERT_EQ(out[i], 0);
}

// A split model's reader: each part's bytes at its FilePart offset, tails as zeros, and a read
// that leaves its part an error naming the part.
TEST(SplitModelReaderTest, ReadsEachPartAtItsOffset) {
  TempFile first(::testing::TempDir(), 10000, 2);
  TempFile second(::testing::TempDir(), kFileSize, 3);
  const FilePart parts[] = {{first.path(), 0, 10000}, {second.path(), kFilePartSpacing, kFileSize}};
  auto opened = open_file_reader(parts);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  FileReader& reader = *opened.value();
  EXPECT_EQ(reader.path(), first.path());
  EXPECT_EQ(reader.size(), kFilePartSpacing + kFileSize);
  EXPECT_EQ(reader.descriptor(), -1);
  EXPECT_EQ(reader.part_at(4096).start, 0u);
  EXPECT_EQ(reader.part_at(kFilePartSpacing + 4096).start, kFilePartSpacing);
  EXPECT_EQ(reader.part_at(kFilePartSpacing + 4096).reader->path(), second.path());
  EXPECT_GE(reader.part_at(kFilePartSpacing).reader->descriptor(), 0);

  const size_t alignment = reader.alignment();
  for (const auto& [path, start, length] :
       {std::tuple{first.path(), uint64_t(0), size_t(round_up(10000, alignment))},
        std::tuple{second.path(), kFilePartSpacing, size_t(1 << 20)},
        std::tuple{second.path(), kFilePartSpacing + (kFileSize / alignment) * alignment,
                   alignment}}) {
    AlignedBuffer buffer(length, 4096, 0xAA);
    ASSERT_TRUE(reader.read(buffer.data(), start, length).ok()) << start;
    const uint64_t in_part = start - (start >= kFilePartSpacing ? kFilePartSpacing : 0);
    const std::vector<uint8_t> expected = reference_read(path, in_part, length);
    ASSERT_EQ(std::memcmp(buffer.data(), expected.data(), expected.size()), 0) << start;
    for (size_t j = expected.size(); j < length; ++j) ASSERT_EQ(buffer.data()[j], 0) << j;
  }

  AlignedBuffer buffer(2 * alignment);
  const Status past = reader.read(buffer.data(), round_up(10000, alignment), 2 * alignment);
  EXPECT_FALSE(past.ok());
  EXPECT_EQ(past.message().rfind(first.path() + ": read of", 0), 0u) << past.message();
}

}  // namespace
}  // namespace strata
