#include <gtest/gtest.h>

#include "engine/request.h"

namespace tern::engine {
namespace {

// The engine keeps one slot per unfinished sample for its last event; whatever is left carries
// tokens. Every request keeps the same room for tokens, whatever its n: with max(64, n + 1),
// the old capacity, an n = 64 request had one slot, and a consumer that fell behind got its
// tokens back one engine wake-up at a time (minutes for a slow reader on a busy machine).
TEST(EventChannelCapacityTest, EveryRequestKeepsItsRoomForTokensWhateverItsN) {
  for (const std::int32_t n : {1, 2, 8, 64, 128}) {
    const std::size_t capacity = event_channel_capacity(64, n);
    EXPECT_EQ(capacity - static_cast<std::size_t>(n), 63u) << "n " << n;
  }
  EXPECT_EQ(event_channel_capacity(4, 1), 4u);  // a single sample: exactly what was asked
  EXPECT_EQ(event_channel_capacity(0, 1), 2u);  // room for a token and the last event
}

}  // namespace
}  // namespace tern::engine
