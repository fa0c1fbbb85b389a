// The preparation queue's fairness, with jobs that block until the test lets them go: order is
// read from sequence numbers the jobs take as they start and finish, never from timings.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "service/preparation_queue.h"

namespace tern::service {
namespace {

using namespace std::chrono_literals;

// What the jobs share: a gate they wait at, and the order in which they started and finished.
class Journal {
 public:
  // A job that notes its start, waits at the gate when `blocking`, and notes its end.
  auto job(std::string name, bool blocking) {
    return [this, name = std::move(name), blocking] {
      note("start " + name);
      if (blocking) {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return open_; });
      }
      note("end " + name);
    };
  }
  void open_gate() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    changed_.notify_all();
  }
  // Waits (a bound only, never a measurement) until `entry` is noted; false if it never was.
  bool wait_for(const std::string& entry) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 20s, [&] { return position(entry) >= 0; });
  }
  int position_of(const std::string& entry) {
    std::lock_guard lock(mutex_);
    return position(entry);
  }
  std::vector<std::string> entries() {
    std::lock_guard lock(mutex_);
    return entries_;
  }

 private:
  void note(std::string entry) {
    {
      std::lock_guard lock(mutex_);
      entries_.push_back(std::move(entry));
    }
    changed_.notify_all();
  }
  int position(const std::string& entry) const {
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i] == entry) return static_cast<int>(i);
    }
    return -1;
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  std::vector<std::string> entries_;
};

// The case: one key's two huge prompts, then another key's 4-token request. The small one
// is prepared before either huge one finishes, on the thread the first key may not take.
TEST(PreparationQueue, SmallJobOfAnotherClientRunsBeforeTwoLongOnesFinish) {
  Journal journal;
  PreparationQueue queue(2);
  EXPECT_EQ(queue.max_running_per_client(), 1u);
  queue.submit("key:a", journal.job("a1", true));
  ASSERT_TRUE(journal.wait_for("start a1"));
  queue.submit("key:a", journal.job("a2", true));
  queue.submit("key:b", journal.job("b", false));
  const bool small_done = journal.wait_for("end b");
  journal.open_gate();
  ASSERT_TRUE(journal.wait_for("end a2"));
  EXPECT_TRUE(small_done);
  EXPECT_LT(journal.position_of("end b"), journal.position_of("end a1"));
  EXPECT_LT(journal.position_of("end b"), journal.position_of("start a2"));
  queue.stop();
}

// With one thread nothing can be held back for others, but turns still alternate: a client that
// has just been served waits behind one that has not.
TEST(PreparationQueue, OneThreadTakesClientsInTurn) {
  Journal journal;
  PreparationQueue queue(1);
  queue.submit("a", journal.job("a1", true));
  ASSERT_TRUE(journal.wait_for("start a1"));
  queue.submit("a", journal.job("a2", false));
  queue.submit("a", journal.job("a3", false));
  queue.submit("b", journal.job("b1", false));
  queue.submit("b", journal.job("b2", false));
  journal.open_gate();
  ASSERT_TRUE(journal.wait_for("end a3"));
  ASSERT_TRUE(journal.wait_for("end b2"));
  EXPECT_EQ(journal.entries(),
            (std::vector<std::string>{"start a1", "end a1", "start b1", "end b1", "start a2",
                                      "end a2", "start b2", "end b2", "start a3", "end a3"}));
}

// A client alone still gets all threads but one.
TEST(PreparationQueue, OneClientUsesAllThreadsButOne) {
  Journal journal;
  PreparationQueue queue(3);
  EXPECT_EQ(queue.max_running_per_client(), 2u);
  for (const char* name : {"1", "2", "3"}) queue.submit("a", journal.job(name, true));
  ASSERT_TRUE(journal.wait_for("start 1"));
  ASSERT_TRUE(journal.wait_for("start 2"));
  queue.submit("b", journal.job("b", false));
  ASSERT_TRUE(journal.wait_for("end b"));
  EXPECT_EQ(journal.position_of("start 3"), -1);
  journal.open_gate();
  ASSERT_TRUE(journal.wait_for("end 3"));
}

// Stopping destroys the jobs still waiting, unrun, and waits for the running ones.
TEST(PreparationQueue, StopDropsWaitingJobsAndFinishesRunningOnes) {
  Journal journal;
  PreparationQueue queue(1);
  queue.submit("a", journal.job("running", true));
  ASSERT_TRUE(journal.wait_for("start running"));
  auto destroyed = std::make_shared<std::atomic<bool>>(false);
  struct Flag {
    std::shared_ptr<std::atomic<bool>> destroyed;
    ~Flag() {
      if (destroyed) destroyed->store(true);
    }
  };
  std::atomic<bool> ran{false};
  queue.submit("b", [&ran, flag = std::make_shared<Flag>(Flag{destroyed})] { ran.store(true); });
  ASSERT_EQ(queue.waiting(), 1u);
  std::thread stopper([&] { queue.stop(); });
  // The stop has dropped the waiting job before the running one may end.
  for (int i = 0; i < 4000 && queue.waiting() > 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(queue.waiting(), 0u);
  journal.open_gate();
  stopper.join();
  EXPECT_GE(journal.position_of("end running"), 0);
  EXPECT_FALSE(ran.load());
  EXPECT_TRUE(destroyed->load());
  // A job submitted after the stop is dropped too.
  queue.submit("c", [&ran] { ran.store(true); });
  EXPECT_FALSE(ran.load());
}

}  // namespace
}  // namespace tern::service
