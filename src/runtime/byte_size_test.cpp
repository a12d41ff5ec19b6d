#include "runtime/byte_size.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(ByteSize, ParsesBinaryUnits) {
  EXPECT_EQ(parse_byte_size("512M").value(), 512ull << 20);
  EXPECT_EQ(parse_byte_size("4G").value(), 4ull << 30);
  EXPECT_EQ(parse_byte_size("4GiB").value(), 4ull << 30);
  EXPECT_EQ(parse_byte_size("4gb").value(), 4ull << 30);
  EXPECT_EQ(parse_byte_size("1.5G").value(), 3ull << 29);
  EXPECT_EQ(parse_byte_size("100").value(), 100u);
  EXPECT_EQ(parse_byte_size("64K").value(), 65536u);
}

TEST(ByteSize, RefusesGarbageWithAMessage) {
  for (const char* bad : {"", "G", "12Q", "-1G", "1e999G", "1.2.3M", "99999999999T"}) {
    const auto result = parse_byte_size(bad);
    ASSERT_FALSE(result.ok()) << bad;
    EXPECT_NE(result.status().message().find("invalid size"), std::string::npos);
  }
}

TEST(ByteSize, FormatsReadably) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(3ull << 29), "1.50 GiB");
}

}  // namespace
}  // namespace strata
