// Regression: a job started right after construction, before the workers first ran, was missed
// by them and the caller waited forever.
#include <gtest/gtest.h>

#include <atomic>

#include "kernels/cpu/thread_pool.h"

namespace tern::kernels {
namespace {

TEST(ThreadPoolStartup, JobRightAfterConstructionReachesEveryThread) {
  for (int round = 0; round < 2000; ++round) {
    ThreadPool pool(3);
    std::atomic<int> calls{0};
    pool.run([&](int, int) { calls.fetch_add(1); });
    ASSERT_EQ(calls.load(), 3) << "round " << round;
  }
}

}  // namespace
}  // namespace tern::kernels
