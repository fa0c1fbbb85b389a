// RankWorkers: one thread per rank, every job on its own rank's thread, the first failure
// reported and announced at once so that ranks waiting on the failed one can be released.

#include "engine/backend/cuda/rank_workers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

namespace tern::engine::cuda {
namespace {

TEST(RankWorkers, EachRankRunsOnItsOwnThreadEveryTime) {
  RankWorkers workers(4, nullptr);
  std::vector<std::thread::id> first(4), second(4);
  ASSERT_TRUE(workers
                  .run([&](int rank) {
                    first[static_cast<std::size_t>(rank)] = std::this_thread::get_id();
                    return Status::success();
                  })
                  .ok());
  ASSERT_TRUE(workers
                  .run([&](int rank) {
                    second[static_cast<std::size_t>(rank)] = std::this_thread::get_id();
                    return Status::success();
                  })
                  .ok());
  EXPECT_EQ(first, second);
  EXPECT_EQ(std::set<std::thread::id>(first.begin(), first.end()).size(), 4u);
  EXPECT_EQ(std::ranges::count(first, std::this_thread::get_id()), 0);
}

// Rank 2 fails; rank 0 waits for it (as in a collective) until on_failure releases it, then
// fails too: the step reports rank 2's error, the one that came first.
TEST(RankWorkers, TheFirstFailureIsReportedAndReleasesTheOthers) {
  std::atomic<bool> released{false};
  std::atomic<int> failures_announced{0};
  RankWorkers workers(3, [&](int) {
    ++failures_announced;
    released = true;
  });
  const Status result = workers.run([&](int rank) -> Status {
    if (rank == 2) return Error{"rank 2 broke"};
    if (rank == 0) {
      while (!released) std::this_thread::yield();
      return Error{"rank 0 released"};
    }
    return Status::success();
  });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.message(), "rank 2 broke");
  EXPECT_EQ(failures_announced, 2);
  EXPECT_TRUE(workers.run([](int) { return Status::success(); }).ok());
}

}  // namespace
}  // namespace tern::engine::cuda
