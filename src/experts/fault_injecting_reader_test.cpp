#include "experts/fault_injecting_reader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

namespace strata {
namespace {

std::vector<uint8_t> pattern(size_t size) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = uint8_t(i * 29 + i / 256);
  return bytes;
}

TEST(MemoryFileReaderTest, ReadsAndKeepsTheReaderContract) {
  const std::vector<uint8_t> bytes = pattern(10000);
  MemoryFileReader reader("mem.gguf", bytes, 4096);
  EXPECT_EQ(reader.size(), 10000u);
  EXPECT_TRUE(reader.direct());
  alignas(4096) static uint8_t buffer[3 * 4096];
  std::memset(buffer, 0xAA, sizeof(buffer));
  ASSERT_TRUE(reader.read(buffer, 4096, 8192).ok());  // runs 1808 bytes into the tail
  EXPECT_EQ(std::memcmp(buffer, bytes.data() + 4096, 10000 - 4096), 0);
  for (size_t i = 10000 - 4096; i < 8192; ++i) ASSERT_EQ(buffer[i], 0);

  const Status misaligned = reader.read(buffer, 100, 4096);
  ASSERT_FALSE(misaligned.ok());
  EXPECT_EQ(misaligned.message(),
            "mem.gguf: read of 4096 bytes at offset 100: destination, offset or length not "
            "aligned to 4096 bytes");
  const Status past = reader.read(buffer, 8192, 8192);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.message(),
            "mem.gguf: read of 8192 bytes at offset 8192: past end of file "
            "(10000 bytes)");
}

TEST(FaultInjectingReaderTest, PassesCleanReadsThroughAndCountsThem) {
  const std::vector<uint8_t> bytes = pattern(5000);
  const auto reader = FaultInjectingReader::over_bytes("m.gguf", bytes);
  std::vector<uint8_t> out(100);
  ASSERT_TRUE(reader->read(out.data(), 1234, 100).ok());
  EXPECT_EQ(std::memcmp(out.data(), bytes.data() + 1234, 100), 0);
  ASSERT_TRUE(reader->read(out.data(), 0, 10).ok());
  EXPECT_EQ(reader->reads(), 2u);
  const auto log = reader->read_log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].offset, 1234u);
  EXPECT_EQ(log[0].length, 100u);
  EXPECT_EQ(log[1].offset, 0u);
}

TEST(FaultInjectingReaderTest, InjectsErrorsIntoOverlappingReadsOnly) {
  const auto reader = FaultInjectingReader::over_bytes("m.gguf", pattern(5000));
  const size_t rule =
      reader->add_rule(FaultInjectingReader::overlapping(1000, 2000), ReadFault::error());
  std::vector<uint8_t> out(500);
  EXPECT_TRUE(reader->read(out.data(), 500, 500).ok());    // ends where the range begins
  EXPECT_TRUE(reader->read(out.data(), 2000, 500).ok());   // begins where it ends
  const Status hit = reader->read(out.data(), 1900, 200);  // overlaps its last 100 bytes
  ASSERT_FALSE(hit.ok());
  EXPECT_EQ(hit.message(), "m.gguf: read of 200 bytes at offset 1900: Input/output error");
  EXPECT_EQ(reader->rule_hits(rule), 1u);
  EXPECT_EQ(reader->reads(), 3u);
}

TEST(FaultInjectingReaderTest, ShortReadAndOtherErrnosAreWordedLikeRealOnes) {
  const auto reader = FaultInjectingReader::over_bytes("m.gguf", pattern(5000));
  reader->add_rule([](uint64_t offset, size_t) { return offset == 0; }, ReadFault::short_read(7));
  reader->add_rule([](uint64_t offset, size_t) { return offset == 100; }, ReadFault::error(ENOSPC));
  std::vector<uint8_t> out(64);
  const Status short_read = reader->read(out.data(), 0, 64);
  ASSERT_FALSE(short_read.ok());
  EXPECT_EQ(short_read.message(),
            "m.gguf: read of 64 bytes at offset 0: short read, 7 of 64 bytes");
  const Status no_space = reader->read(out.data(), 100, 64);
  ASSERT_FALSE(no_space.ok());
  EXPECT_EQ(no_space.message(), "m.gguf: read of 64 bytes at offset 100: No space left on device");
}

TEST(FaultInjectingReaderTest, RulesApplyInOrderAndRunOut) {
  const auto reader = FaultInjectingReader::over_bytes("m.gguf", pattern(5000));
  const auto everything = [](uint64_t, size_t) { return true; };
  const size_t twice = reader->add_rule(everything, ReadFault::error(EIO), 2);
  const size_t then = reader->add_rule(everything, ReadFault::short_read(0), 1);
  std::vector<uint8_t> out(16);
  EXPECT_FALSE(reader->read(out.data(), 0, 16).ok());
  EXPECT_FALSE(reader->read(out.data(), 0, 16).ok());
  const Status third = reader->read(out.data(), 0, 16);
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.message().find("short read, 0 of 16 bytes"), std::string::npos);
  EXPECT_TRUE(reader->read(out.data(), 0, 16).ok());
  EXPECT_EQ(reader->rule_hits(twice), 2u);
  EXPECT_EQ(reader->rule_hits(then), 1u);
  reader->clear_rules();
  EXPECT_TRUE(reader->read(out.data(), 0, 16).ok());
}

TEST(FaultInjectingReaderTest, HooksAndDelaysRunOutsideTheLock) {
  const auto reader = FaultInjectingReader::over_bytes("m.gguf", pattern(5000));
  std::atomic<bool> entered = false;
  std::atomic<bool> release = false;
  reader->add_rule(FaultInjectingReader::overlapping(0, 1), ReadFault::call([&](uint64_t, size_t) {
                     entered = true;
                     while (!release) std::this_thread::yield();
                   }));
  reader->add_rule(FaultInjectingReader::overlapping(4000, 5000),
                   ReadFault::delay_by(std::chrono::milliseconds(20)));
  std::vector<uint8_t> held(8);
  std::thread blocked([&] { EXPECT_TRUE(reader->read(held.data(), 0, 8).ok()); });
  while (!entered) std::this_thread::yield();
  // The held read does not stop others from reading, counting or changing rules.
  std::vector<uint8_t> out(8);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(reader->read(out.data(), 4000, 8).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
  EXPECT_EQ(reader->reads(), 2u);
  release = true;
  blocked.join();
  EXPECT_EQ(held, std::vector<uint8_t>(pattern(8)));
}

}  // namespace
}  // namespace strata
