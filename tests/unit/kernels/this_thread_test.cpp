#include "kernels/this_thread.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace tern {
namespace {

std::string this_thread_name() {
  char name[64] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

int this_thread_nice() {
  return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
}

TEST(ThisThread, NamesTheCallingThread) {
  std::string named, cut;
  std::thread([&] {
    name_this_thread("tern-test");
    named = this_thread_name();
    // Linux refuses names over 15 bytes; a long one is cut rather than dropped.
    name_this_thread("tern-a-very-long-thread-name");
    cut = this_thread_name();
  }).join();
  EXPECT_EQ(named, "tern-test");
  EXPECT_EQ(cut, "tern-a-very-lon");
}

// Only the calling thread changes: the thread that started it keeps its own value.
TEST(ThisThread, SetsTheCallingThreadsNiceValue) {
  const int before = this_thread_nice();
  if (before > 18) GTEST_SKIP() << "the test process already runs at nice " << before;
  int inside = -100;
  bool applied = false;
  std::thread([&] {
    applied = set_this_thread_nice(before + 1);
    inside = this_thread_nice();
  }).join();
  EXPECT_TRUE(applied);
  EXPECT_EQ(inside, before + 1);
  EXPECT_EQ(this_thread_nice(), before);
}

}  // namespace
}  // namespace tern
