#include "engine/model/prefault.h"

#include <gtest/gtest.h>

#include <vector>

namespace tern::engine {
namespace {

TEST(Prefault, TouchesUnalignedRegionsAndReportsResidentMemory) {
  const std::vector<std::byte> buffer((std::size_t{3} << 20) + 123, std::byte{1});
  const std::vector<std::span<const std::byte>> regions{
      std::span(buffer).subspan(7), std::span<const std::byte>(), std::span(buffer).first(1)};
  prefault(regions, "test buffer");
  const std::optional<std::uint64_t> resident = resident_memory_bytes();
  ASSERT_TRUE(resident);
  EXPECT_GT(*resident, buffer.size());
}

}  // namespace
}  // namespace tern::engine
