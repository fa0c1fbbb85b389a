#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "engine/expected.h"

namespace tern::engine::cuda {

// One thread per rank of a tensor-parallel group. Each rank's device work (its stream, its
// graph captures and replays, its collectives) stays on its own thread: NCCL warns that one
// thread driving several GPUs under graph capture can deadlock. The caller (the engine thread)
// hands every rank the same job and waits for all of them, once per step.
class RankWorkers {
 public:
  // `on_failure(rank)` runs on a failing rank's thread as soon as its job fails, so that ranks
  // waiting on it in a collective can be released (Communicator::abort).
  RankWorkers(int ranks, std::function<void(int rank)> on_failure);
  ~RankWorkers();  // joins
  RankWorkers(const RankWorkers&) = delete;
  RankWorkers& operator=(const RankWorkers&) = delete;

  int ranks() const { return static_cast<int>(threads_.size()); }

  // Runs job(rank) on every rank's thread at once; returns when all are done, with the error of
  // the rank that failed first (the others may fail because of it). Allocates nothing: `job`
  // is borrowed until it returns.
  template <class Job>
  Status run(Job&& job) {
    return run_erased(&job, [](void* callable, int rank) -> Status {
      return (*static_cast<std::remove_reference_t<Job>*>(callable))(rank);
    });
  }

 private:
  using Trampoline = Status (*)(void* callable, int rank);
  Status run_erased(void* callable, Trampoline trampoline);
  void loop(int rank);

  std::function<void(int)> on_failure_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  std::uint64_t generation_ = 0;
  int running_ = 0;
  int first_failure_ = -1;  // the rank whose job failed first in this run
  bool stopping_ = false;
  void* callable_ = nullptr;
  Trampoline trampoline_ = nullptr;
  std::vector<Status> results_;  // per rank, of the last run
  std::vector<std::thread> threads_;
};

}  // namespace tern::engine::cuda
