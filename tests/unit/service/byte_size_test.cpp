#include "service/byte_size.h"

#include <gtest/gtest.h>

namespace tern::service {
namespace {

// The config's byte sizes and the --emulated-device-memory flag read the same text.
TEST(ByteSize, ReadsIntegersAndUnits) {
  EXPECT_EQ(parse_byte_size("1073741824"), 1073741824u);
  EXPECT_EQ(parse_byte_size("4GiB"), 4ull << 30);
  EXPECT_EQ(parse_byte_size("512 MiB"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("2GB"), 2000000000u);
  EXPECT_EQ(parse_byte_size("0"), 0u);
  for (const char* bad : {"", "lots", "3XB", "-1", "GiB", "1e30", "4gib"}) {
    EXPECT_FALSE(parse_byte_size(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace tern::service
