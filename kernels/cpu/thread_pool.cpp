#include "kernels/cpu/thread_pool.h"

#include <cassert>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "kernels/this_thread.h"

namespace tern::kernels {
namespace {

// Long enough to cover the gap between two kernels of one forward pass, short enough that an
// idle server does not keep cores busy.
constexpr auto kSpinTime = std::chrono::microseconds(100);

thread_local bool inside_pool_task = false;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until predicate() holds or kSpinTime passes; true when it held.
template <class Predicate>
bool spin_until(Predicate predicate) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (predicate()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() - start > kSpinTime) return predicate();
  }
}

// Sleeps while *word == expected. The kernel compares and sleeps atomically, so a wake-up sent
// after the caller's last check is not lost.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
#else
  word.wait(expected, std::memory_order_seq_cst);
#endif
}

void futex_wake_all(std::atomic<std::uint32_t>& word) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 0x7FFFFFFF,
          nullptr, nullptr, 0);
#else
  word.notify_all();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int threads, int worker_nice)
    : size_(threads < 1 ? 1 : threads), worker_nice_(worker_nice) {
  workers_.reserve(static_cast<std::size_t>(size_ - 1));
  for (int i = 1; i < size_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(generation_);
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run(FunctionRef<void(int thread_index, int thread_count)> task) {
  if (size_ == 1 || inside_pool_task) {
    task(0, 1);
    return;
  }
  std::lock_guard lock(callers_);
  task_ = &task;
  remaining_.store(static_cast<std::uint32_t>(size_ - 1), std::memory_order_relaxed);
  // seq_cst pairs with the worker's sleeping_workers_ increment: either it sees the new
  // generation before sleeping, or this sees it asleep and wakes it.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(generation_);
  inside_pool_task = true;
  task(0, size_);
  inside_pool_task = false;
  wait_for_workers();
  task_ = nullptr;
}

void ThreadPool::parallel_for(std::int64_t count,
                              FunctionRef<void(std::int64_t begin, std::int64_t end)> task) {
  if (count <= 0) return;
  if (count == 1 || size_ == 1 || inside_pool_task) {
    task(0, count);
    return;
  }
  run([&](int index, int threads) {
    const std::int64_t begin = count * index / threads;
    const std::int64_t end = count * (index + 1) / threads;
    if (begin < end) task(begin, end);
  });
}

void ThreadPool::wait_for_workers() {
  const auto done = [this] { return remaining_.load(std::memory_order_acquire) == 0; };
  if (spin_until(done)) return;
  caller_sleeping_.store(1, std::memory_order_seq_cst);
  for (std::uint32_t left = remaining_.load(std::memory_order_seq_cst); left != 0;
       left = remaining_.load(std::memory_order_seq_cst)) {
    futex_wait(remaining_, left);
  }
  caller_sleeping_.store(0, std::memory_order_relaxed);
}

void ThreadPool::worker_loop(int thread_index) {
  // The generation at construction, not at thread start: a run() that begins before this thread
  // first gets scheduled must still count as new work, or the caller waits forever.
  std::uint32_t seen = 0;
  inside_pool_task = true;
  name_this_thread("tern-compute");
  if (worker_nice_ != 0) set_this_thread_nice(worker_nice_);
  for (;;) {
    const auto started = [&] { return generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(started)) {
      sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
      if (generation_.load(std::memory_order_seq_cst) == seen) futex_wait(generation_, seen);
      sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
    }
    const std::uint32_t now = generation_.load(std::memory_order_acquire);
    if (now == seen) continue;  // spurious wake-up
    seen = now;
    if (stopping_.load(std::memory_order_acquire)) return;
    (*task_)(thread_index, size_);
    if (remaining_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        caller_sleeping_.load(std::memory_order_seq_cst) != 0) {
      futex_wake_all(remaining_);
    }
  }
}

}  // namespace tern::kernels
