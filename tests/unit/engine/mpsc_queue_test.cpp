#include "engine/mpsc_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace tern::engine {
namespace {

TEST(MpscQueue, KeepsFifoOrderAcrossWrapAround) {
  MpscQueue<int> queue(4);
  EXPECT_EQ(queue.capacity(), 4u);
  int next_pushed = 0;
  int next_popped = 0;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 3; ++i) {
      int value = next_pushed++;
      ASSERT_TRUE(queue.try_push(std::move(value)));
    }
    for (int i = 0; i < 3; ++i) {
      const auto popped = queue.try_pop();
      ASSERT_TRUE(popped.has_value());
      EXPECT_EQ(*popped, next_popped++);
    }
  }
  EXPECT_TRUE(queue.empty());
  EXPECT_FALSE(queue.try_pop().has_value());
}

TEST(MpscQueue, FullQueueRefusesAndLeavesTheValue) {
  MpscQueue<std::unique_ptr<int>> queue(2);
  ASSERT_TRUE(queue.try_push(std::make_unique<int>(1)));
  ASSERT_TRUE(queue.try_push(std::make_unique<int>(2)));
  auto third = std::make_unique<int>(3);
  EXPECT_FALSE(queue.try_push(std::move(third)));
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(*third, 3);
  EXPECT_EQ(queue.size_approx(), 2u);
  EXPECT_EQ(**queue.try_pop(), 1);
  EXPECT_TRUE(queue.try_push(std::move(third)));
}

TEST(MpscQueue, DestroysWhatWasNeverPopped) {
  auto tracker = std::make_shared<int>(0);
  {
    MpscQueue<std::shared_ptr<int>> queue(8);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(queue.try_push(std::shared_ptr<int>(tracker)));
    EXPECT_EQ(tracker.use_count(), 6);
  }
  EXPECT_EQ(tracker.use_count(), 1);
}

TEST(MpscQueue, WaitReturnsOnPushAndOnWake) {
  MpscQueue<int> queue(8);
  std::atomic<int> received = -1;
  std::thread consumer([&] {
    for (;;) {
      const std::uint32_t epoch = queue.epoch();
      if (auto value = queue.try_pop()) {
        received = *value;
        return;
      }
      queue.wait(epoch);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(queue.try_push(42));
  consumer.join();
  EXPECT_EQ(received, 42);

  std::atomic<bool> stop = false;
  std::thread sleeper([&] {
    for (;;) {
      const std::uint32_t epoch = queue.epoch();
      if (stop) return;
      queue.wait(epoch);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  queue.wake();
  sleeper.join();
}

// A wake() that lands after the consumer looked for work and before it sleeps is not lost: the
// engine once slept through such a wake from a consumer that had made room for a paused
// sample, and the stream stalled until something else woke it.
TEST(MpscQueue, AWakeBetweenTheCheckAndTheSleepIsNotLost) {
  MpscQueue<int> queue(8);
  std::atomic<bool> returned = false;
  const std::uint32_t epoch = queue.epoch();  // the consumer looks for work: none
  queue.wake();                               // the producer wakes it before it sleeps
  std::thread consumer([&] {
    queue.wait(epoch);
    returned = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!returned && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const bool woke = returned.load();
  if (!woke) queue.wake();  // let the thread go before failing
  consumer.join();
  EXPECT_TRUE(woke) << "wait() slept through a wake() that came before it";
}

// Every item arrives exactly once, and each producer's items arrive in the order it pushed.
TEST(MpscQueue, StressFourProducers) {
  constexpr int kProducers = 4;
  constexpr std::uint32_t kItemsEach = 100'000;
  MpscQueue<std::uint64_t> queue(1024);
  std::vector<std::thread> producers;
  for (int producer = 0; producer < kProducers; ++producer) {
    producers.emplace_back([&queue, producer] {
      for (std::uint32_t i = 0; i < kItemsEach; ++i) {
        std::uint64_t item = (static_cast<std::uint64_t>(producer) << 32) | i;
        while (!queue.try_push(std::move(item))) std::this_thread::yield();
      }
    });
  }
  std::vector<std::uint32_t> next(kProducers, 0);
  std::uint64_t received = 0;
  bool in_order = true;
  while (received < kProducers * static_cast<std::uint64_t>(kItemsEach)) {
    const std::uint32_t epoch = queue.epoch();
    const auto item = queue.try_pop();
    if (!item) {
      queue.wait(epoch);
      continue;
    }
    const auto producer = static_cast<std::size_t>(*item >> 32);
    const auto index = static_cast<std::uint32_t>(*item);
    in_order = in_order && producer < next.size() && next[producer] == index;
    if (producer < next.size()) next[producer] = index + 1;
    ++received;
  }
  for (std::thread& producer : producers) producer.join();
  EXPECT_TRUE(in_order);
  for (const std::uint32_t count : next) EXPECT_EQ(count, kItemsEach);
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace tern::engine
