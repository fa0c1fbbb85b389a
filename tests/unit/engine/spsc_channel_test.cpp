#include "engine/spsc_channel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

namespace tern::engine {
namespace {

class CountingWaker final : public ChannelWaker {
 public:
  void wake() override {
    wakes.fetch_add(1);
    wakes.notify_one();
  }
  std::atomic<int> wakes = 0;
};

TEST(SpscChannel, BoundedFifo) {
  SpscChannel<int> channel(3);
  EXPECT_EQ(channel.capacity(), 4u);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(channel.try_push(int{i}));
  EXPECT_FALSE(channel.try_push(99));  // full: the engine moves on instead of blocking
  EXPECT_EQ(channel.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(*channel.try_pop(), i);
  EXPECT_FALSE(channel.try_pop().has_value());
  EXPECT_TRUE(channel.empty());
}

TEST(SpscChannel, FullChannelLeavesTheValue) {
  SpscChannel<std::unique_ptr<int>> channel(1);
  ASSERT_TRUE(channel.try_push(std::make_unique<int>(1)));
  auto second = std::make_unique<int>(2);
  EXPECT_FALSE(channel.try_push(std::move(second)));
  ASSERT_NE(second, nullptr);
}

TEST(SpscChannel, ArmedWakerFiresOnceOnNextPush) {
  SpscChannel<int> channel(8);
  CountingWaker waker;
  EXPECT_TRUE(channel.arm(waker));
  ASSERT_TRUE(channel.try_push(1));
  EXPECT_EQ(waker.wakes, 1);
  ASSERT_TRUE(channel.try_push(2));
  EXPECT_EQ(waker.wakes, 1);         // one-shot: the consumer re-arms after draining
  EXPECT_FALSE(channel.arm(waker));  // items are waiting: pop instead of suspending
  EXPECT_EQ(*channel.try_pop(), 1);
  EXPECT_EQ(*channel.try_pop(), 2);
  EXPECT_TRUE(channel.arm(waker));
  EXPECT_TRUE(channel.disarm());  // e.g. a timeout won the race
  ASSERT_TRUE(channel.try_push(3));
  EXPECT_EQ(waker.wakes, 1);
  EXPECT_FALSE(channel.disarm());
}

// The consumer sleeps whenever the channel is empty; nothing is lost, duplicated or reordered
// and no wake-up is missed (a missed one would hang the test).
TEST(SpscChannel, StressWithSleepingConsumer) {
  constexpr std::uint64_t kItems = 1'000'000;
  SpscChannel<std::uint64_t> channel(64);
  CountingWaker waker;
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < kItems; ++i) {
      std::uint64_t item = i;
      while (!channel.try_push(std::move(item))) std::this_thread::yield();
    }
  });
  std::uint64_t expected = 0;
  bool in_order = true;
  while (expected < kItems) {
    if (const auto item = channel.try_pop()) {
      in_order = in_order && *item == expected;
      ++expected;
      continue;
    }
    const int seen = waker.wakes.load();
    if (channel.arm(waker)) waker.wakes.wait(seen);
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_TRUE(channel.empty());
  channel.disarm();
}

}  // namespace
}  // namespace tern::engine
