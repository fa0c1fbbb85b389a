#include "kernels/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <vector>

namespace tern::kernels {
namespace {

TEST(ThreadPool, RunCallsEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int repeat = 0; repeat < 200; ++repeat) {
      std::vector<std::atomic<int>> calls(static_cast<std::size_t>(threads));
      pool.run([&](int index, int count) {
        EXPECT_EQ(count, threads);
        calls[static_cast<std::size_t>(index)].fetch_add(1);
      });
      for (auto& c : calls) EXPECT_EQ(c.load(), 1);
    }
  }
}

TEST(ThreadPool, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool(3);
  for (std::int64_t count : {0, 1, 2, 3, 7, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(count));
    pool.parallel_for(count, [&](std::int64_t begin, std::int64_t end) {
      EXPECT_LT(begin, end);
      for (std::int64_t i = begin; i < end; ++i) hits[static_cast<std::size_t>(i)].fetch_add(1);
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, NestedCallRunsInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.run([&](int, int) {
    pool.run([&](int index, int count) {
      EXPECT_EQ(index, 0);
      EXPECT_EQ(count, 1);
      inner.fetch_add(1);
    });
  });
  EXPECT_EQ(inner.load(), 2);
}

TEST(ThreadPool, WorkersWakeAfterSleeping) {
  ThreadPool pool(2);
  std::atomic<int> calls{0};
  pool.run([&](int, int) { calls.fetch_add(1); });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin window
  pool.run([&](int, int) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 4);
}

// Workers take the pool's nice value (the caller keeps its own), so compute yields the CPU to
// the request path.
TEST(ThreadPool, WorkersRunAtTheirNiceValue) {
  const auto thread_nice = [] {
    return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  };
  const int caller_nice = thread_nice();
  if (caller_nice > 14) GTEST_SKIP() << "the test process already runs at nice " << caller_nice;
  ThreadPool pool(2, caller_nice + 5);
  EXPECT_EQ(pool.worker_nice(), caller_nice + 5);
  std::vector<int> seen(2, -100);
  pool.run([&](int index, int) { seen[static_cast<std::size_t>(index)] = thread_nice(); });
  EXPECT_EQ(seen[0], caller_nice);
  EXPECT_EQ(seen[1], caller_nice + 5);
}

}  // namespace
}  // namespace tern::kernels
