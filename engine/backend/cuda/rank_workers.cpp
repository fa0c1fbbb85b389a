#include "engine/backend/cuda/rank_workers.h"

namespace tern::engine::cuda {

RankWorkers::RankWorkers(int ranks, std::function<void(int rank)> on_failure)
    : on_failure_(std::move(on_failure)), results_(static_cast<std::size_t>(ranks)) {
  threads_.reserve(static_cast<std::size_t>(ranks));
  for (int rank = 0; rank < ranks; ++rank) threads_.emplace_back([this, rank] { loop(rank); });
}

RankWorkers::~RankWorkers() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

Status RankWorkers::run_erased(void* callable, Trampoline trampoline) {
  std::unique_lock lock(mutex_);
  callable_ = callable;
  trampoline_ = trampoline;
  running_ = ranks();
  first_failure_ = -1;
  ++generation_;
  work_ready_.notify_all();
  work_done_.wait(lock, [this] { return running_ == 0; });
  if (first_failure_ < 0) return Status::success();
  return results_[static_cast<std::size_t>(first_failure_)];
}

void RankWorkers::loop(int rank) {
  std::uint64_t seen = 0;
  for (;;) {
    void* callable = nullptr;
    Trampoline trampoline = nullptr;
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      callable = callable_;
      trampoline = trampoline_;
    }
    Status result = trampoline(callable, rank);
    if (!result.ok()) {
      {
        // Before on_failure: the ranks it releases fail after this one.
        const std::lock_guard lock(mutex_);
        if (first_failure_ < 0) first_failure_ = rank;
      }
      if (on_failure_) on_failure_(rank);
    }
    {
      const std::lock_guard lock(mutex_);
      results_[static_cast<std::size_t>(rank)] = std::move(result);
      if (--running_ == 0) work_done_.notify_one();
    }
  }
}

}  // namespace tern::engine::cuda
