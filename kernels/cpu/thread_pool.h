#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/cpu/function_ref.h"

namespace tern::kernels {

// The process-wide compute pool. The calling thread takes part in every job, so a pool of N
// threads spawns N-1 workers. Workers spin briefly after a job (decode steps follow each other
// within microseconds) and then sleep on a futex, so an idle pool burns no CPU.
//
// Calls from several threads are serialised. A call made from inside a task runs inline on the
// calling thread (as a pool of one) instead of deadlocking.
class ThreadPool {
 public:
  // threads >= 1, counts the caller. Workers run at `worker_nice` (0: unchanged); callers that
  // join in (an engine thread) should run at worker_nice() too, so that no member of a parallel
  // loop waits on a peer the kernel schedules less.
  explicit ThreadPool(int threads, int worker_nice = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }
  int worker_nice() const { return worker_nice_; }

  // Calls task(thread_index, thread_count) once on each of the size() threads (index 0 is the
  // caller) and returns when all have finished. Allocates nothing.
  void run(FunctionRef<void(int thread_index, int thread_count)> task);

  // Splits [0, count) into size() contiguous ranges and calls task(begin, end) for each non-empty
  // one; the caller takes the first range.
  void parallel_for(std::int64_t count,
                    FunctionRef<void(std::int64_t begin, std::int64_t end)> task);

 private:
  void worker_loop(int thread_index);
  void wait_for_workers();

  int size_;
  int worker_nice_ = 0;
  std::vector<std::thread> workers_;
  std::mutex callers_;  // one job at a time
  FunctionRef<void(int, int)>* task_ = nullptr;
  alignas(64) std::atomic<std::uint32_t> generation_{0};  // bumped to start a job
  std::atomic<int> sleeping_workers_{0};
  alignas(64) std::atomic<std::uint32_t> remaining_{0};  // workers still in the current job
  std::atomic<int> caller_sleeping_{0};
  alignas(64) std::atomic<bool> stopping_{false};
};

}  // namespace tern::kernels
