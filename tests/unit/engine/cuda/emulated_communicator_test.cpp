// The emulated Communicator: four ranks, each driven by its own thread on its own emulated
// device, all-reduce (all_gather + the rank-order sum) to identical bits equal to the host's
// rank-order sum, directly and from captured graphs replayed with new inputs; a collective that
// does not match fails on every rank alike; abort ends every wait with an error.

#include "engine/backend/cuda/emulated_communicator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend/cuda/emulated_device_runtime.h"
#include "tests/unit/engine/cuda/device_runtime_test_support.h"

namespace tern::engine::cuda {
namespace {

constexpr int kRanks = 4;
constexpr int kDevices[kRanks] = {0, 1, 2, 3};

std::unique_ptr<DeviceRuntime> four_devices() {
  EmulatedDeviceOptions options;
  options.devices = kRanks;
  options.memory_bytes = 16 << 20;
  return make_emulated_device_runtime(options);
}

std::vector<std::unique_ptr<Communicator>> group_on(DeviceRuntime& runtime) {
  Expected<std::vector<std::unique_ptr<Communicator>>> made =
      make_emulated_communicators(runtime, kDevices);
  EXPECT_TRUE(made.ok()) << made.error().message;
  return made.ok() ? std::move(made).value() : std::vector<std::unique_ptr<Communicator>>{};
}

// Magnitudes from 2^-20 to 2^20, so that the order of the sum shows in its bits.
std::vector<float> partial_of(int rank, int count, unsigned round) {
  std::mt19937 random(1000 * round + static_cast<unsigned>(rank));
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (float& v : values) v = std::ldexp(mantissa(random), exponent(random));
  return values;
}

std::vector<std::uint32_t> rank_order_sum_bits(int count, unsigned round) {
  std::vector<float> sum = partial_of(0, count, round);
  for (int r = 1; r < kRanks; ++r) {
    const std::vector<float> partial = partial_of(r, count, round);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += partial[i];
  }
  std::vector<std::uint32_t> bits;
  for (const float v : sum) bits.push_back(std::bit_cast<std::uint32_t>(v));
  return bits;
}

// Runs body(rank) on one thread per rank, each on its device, and joins them.
void on_every_rank(DeviceRuntime& runtime, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&runtime, &body, rank] {
      ASSERT_TRUE(runtime.set_device(kDevices[rank]).ok());
      body(rank);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

TEST(EmulatedCommunicator, FourRanksAllReduceToTheSameRankOrderSum) {
  auto runtime = four_devices();
  auto group = group_on(*runtime);
  ASSERT_EQ(group.size(), 4u);
  constexpr int kCount = 257;
  std::vector<std::vector<std::uint32_t>> results(kRanks);
  std::vector<std::vector<float>> gathered(kRanks);
  on_every_rank(*runtime, [&](int rank) {
    Communicator& communicator = *group[static_cast<std::size_t>(rank)];
    EXPECT_EQ(communicator.rank(), rank);
    EXPECT_EQ(communicator.ranks(), kRanks);
    const Stream stream = *runtime->create_stream();
    auto partial = must_allocate(*runtime, kCount * 4, "partial");
    auto all = must_allocate(*runtime, kRanks * kCount * 4, "gathered");
    auto out = must_allocate(*runtime, kCount * 4, "out");
    const std::vector<float> values = partial_of(rank, kCount, 0);
    ASSERT_TRUE(runtime->copy_to_device(partial.get(), values.data(), kCount * 4, stream).ok());
    const Status reduced = all_reduce_sum(communicator, *runtime, partial.as<float>(),
                                          all.as<float>(), out.as<float>(), kCount, stream);
    ASSERT_TRUE(reduced.ok()) << reduced.message();
    for (const float v : download<float>(*runtime, out, stream)) {
      results[static_cast<std::size_t>(rank)].push_back(std::bit_cast<std::uint32_t>(v));
    }
    gathered[static_cast<std::size_t>(rank)] = download<float>(*runtime, all, stream);
    runtime->destroy_stream(stream);
  });
  std::vector<float> expected_gathered;
  for (int r = 0; r < kRanks; ++r) {
    const std::vector<float> partial = partial_of(r, kCount, 0);
    expected_gathered.insert(expected_gathered.end(), partial.begin(), partial.end());
  }
  const std::vector<std::uint32_t> expected = rank_order_sum_bits(kCount, 0);
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(gathered[static_cast<std::size_t>(rank)], expected_gathered) << "rank " << rank;
    EXPECT_EQ(results[static_cast<std::size_t>(rank)], expected) << "rank " << rank;
  }
}

// Each rank captures copy-in, all-reduce, copy-out once, then replays it with new inputs: the
// collective meets at every replay.
TEST(EmulatedCommunicator, ACapturedAllReduceMeetsAtEveryReplay) {
  auto runtime = four_devices();
  auto group = group_on(*runtime);
  ASSERT_EQ(group.size(), 4u);
  constexpr int kCount = 100;
  constexpr unsigned kReplays = 3;
  std::vector<std::vector<std::vector<std::uint32_t>>> results(kRanks);
  on_every_rank(*runtime, [&](int rank) {
    Communicator& communicator = *group[static_cast<std::size_t>(rank)];
    const Stream stream = *runtime->create_stream();
    auto partial = must_allocate(*runtime, kCount * 4, "partial");
    auto all = must_allocate(*runtime, kRanks * kCount * 4, "gathered");
    auto out = must_allocate(*runtime, kCount * 4, "out");
    std::vector<float> staged(kCount, 0.0f), fetched(kCount, 0.0f);
    ASSERT_TRUE(runtime->begin_capture(stream).ok());
    ASSERT_TRUE(runtime->copy_to_device(partial.get(), staged.data(), kCount * 4, stream).ok());
    ASSERT_TRUE(all_reduce_sum(communicator, *runtime, partial.as<float>(), all.as<float>(),
                               out.as<float>(), kCount, stream)
                    .ok());
    ASSERT_TRUE(runtime->copy_to_host(fetched.data(), out.get(), kCount * 4, stream).ok());
    const Expected<Graph> graph = runtime->end_capture(stream);
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    for (unsigned replay = 1; replay <= kReplays; ++replay) {
      const std::vector<float> values = partial_of(rank, kCount, replay);
      std::copy(values.begin(), values.end(), staged.begin());  // where the graph reads
      const Status launched = runtime->launch_graph(*graph, stream);
      ASSERT_TRUE(launched.ok()) << launched.message();
      ASSERT_TRUE(runtime->synchronize(stream).ok());
      std::vector<std::uint32_t> bits;
      for (const float v : fetched) bits.push_back(std::bit_cast<std::uint32_t>(v));
      results[static_cast<std::size_t>(rank)].push_back(bits);
    }
    runtime->destroy_graph(*graph);
    runtime->destroy_stream(stream);
  });
  for (int rank = 0; rank < kRanks; ++rank) {
    ASSERT_EQ(results[static_cast<std::size_t>(rank)].size(), kReplays);
    for (unsigned replay = 1; replay <= kReplays; ++replay) {
      EXPECT_EQ(results[static_cast<std::size_t>(rank)][replay - 1],
                rank_order_sum_bits(kCount, replay))
          << "rank " << rank << " replay " << replay;
    }
  }
}

// A count that differs between ranks, or a send buffer that is not device memory, fails the
// collective on every rank with the same message; the group stays usable.
TEST(EmulatedCommunicator, AMismatchedCollectiveFailsOnEveryRankAlike) {
  auto runtime = four_devices();
  auto group = group_on(*runtime);
  ASSERT_EQ(group.size(), 4u);
  std::vector<std::string> counts(kRanks), sends(kRanks);
  std::vector<char> after(kRanks, 0);  // not vector<bool>: each rank writes its own element
  on_every_rank(*runtime, [&](int rank) {
    const auto at = static_cast<std::size_t>(rank);
    Communicator& communicator = *group[at];
    const Stream stream = *runtime->create_stream();
    auto send = must_allocate(*runtime, 8 * 4, "send");
    auto recv = must_allocate(*runtime, kRanks * 8 * 4, "recv");
    const std::size_t count = rank == 2 ? 7 : 8;
    const Status by_count =
        communicator.all_gather(send.as<float>(), recv.as<float>(), count, stream);
    counts[at] = by_count.ok() ? "ok" : by_count.message();
    std::vector<float> host(8);
    const float* from = rank == 1 ? host.data() : send.as<float>();
    const Status by_send = communicator.all_gather(from, recv.as<float>(), 8, stream);
    sends[at] = by_send.ok() ? "ok" : by_send.message();
    after[at] = communicator.all_gather(send.as<float>(), recv.as<float>(), 8, stream).ok();
    runtime->destroy_stream(stream);
  });
  for (int rank = 0; rank < kRanks; ++rank) {
    const auto at = static_cast<std::size_t>(rank);
    EXPECT_EQ(counts[at],
              "cuda-emulated: all_gather with different counts: rank 0 sends 8, rank 2 sends 7");
    EXPECT_EQ(sends[at],
              "cuda-emulated: all_gather: rank 1's 8 floats to send are not device memory");
    EXPECT_TRUE(after[at]) << "rank " << rank;
  }
}

// Rank 3 fails before the collective; the other three wait in all_gather until abort (from
// another thread) ends their waits with an error. Later collectives fail at once.
TEST(EmulatedCommunicator, AbortEndsEveryWaitWithAnError) {
  // Shared with the threads, so that a hang (a failure) can leave them behind safely.
  struct State {
    std::unique_ptr<DeviceRuntime> runtime = four_devices();
    std::vector<std::unique_ptr<Communicator>> group;
    std::vector<std::string> results = std::vector<std::string>(kRanks);
    std::atomic<int> calling{0};
    std::atomic<int> finished{0};
  };
  auto state = std::make_shared<State>();
  state->group = group_on(*state->runtime);
  ASSERT_EQ(state->group.size(), 4u);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks - 1; ++rank) {
    threads.emplace_back([state, rank] {
      DeviceRuntime& runtime = *state->runtime;
      if (!runtime.set_device(rank).ok()) return;
      const Stream stream = *runtime.create_stream();
      auto send = must_allocate(runtime, 16 * 4, "send");
      auto recv = must_allocate(runtime, kRanks * 16 * 4, "recv");
      ++state->calling;
      const Status status = state->group[static_cast<std::size_t>(rank)]->all_gather(
          send.as<float>(), recv.as<float>(), 16, stream);
      state->results[static_cast<std::size_t>(rank)] = status.ok() ? "ok" : status.message();
      ++state->finished;
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (state->calling < kRanks - 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // most likely waiting by now
  state->group[3]->abort();
  while (state->finished < kRanks - 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (state->finished < kRanks - 1) {
    for (std::thread& thread : threads) thread.detach();
    FAIL() << "all_gather still waits 30 s after abort";
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < kRanks - 1; ++rank) {
    EXPECT_EQ(state->results[static_cast<std::size_t>(rank)],
              "cuda-emulated: communicator aborted: rank 3 failed");
  }
  const Stream stream = *state->runtime->create_stream();
  const Status later = state->group[0]->all_gather(nullptr, nullptr, 0, stream);
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.message(), "cuda-emulated: communicator aborted: rank 3 failed");
}

TEST(EmulatedCommunicator, AGroupNeedsDistinctDevicesOfTheRuntime) {
  auto runtime = four_devices();
  const int twice[] = {0, 1, 1};
  const auto duplicate = make_emulated_communicators(*runtime, twice);
  ASSERT_FALSE(duplicate.ok());
  EXPECT_EQ(duplicate.error().message, "cuda-emulated: device 1 is given to two ranks");
  const int missing[] = {0, 4};
  const auto outside = make_emulated_communicators(*runtime, missing);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().message,
            "cuda-emulated: there is no device 4; the emulated machine has 4");
  EXPECT_FALSE(make_emulated_communicators(*runtime, {}).ok());
  const int one[] = {2};
  const auto single = make_emulated_communicators(*runtime, one);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ((*single)[0]->ranks(), 1);
}

}  // namespace
}  // namespace tern::engine::cuda
