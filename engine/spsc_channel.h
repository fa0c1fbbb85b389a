#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>
#include <utility>

namespace tern::engine {

// How a channel's consumer gets woken, e.g. by posting its coroutine's resumption to its
// executor. wake() runs on the producer's thread, so it must be quick and must not block.
class ChannelWaker {
 public:
  virtual void wake() = 0;

 protected:
  ~ChannelWaker() = default;
};

// Bounded ring from one producer (an engine thread) to one consumer (a request's connection):
// the event channel of a request. The producer never blocks; a full channel means the client
// is too slow, and try_push says so. A consumer that finds it empty arms a one-shot waker that
// the next push fires.
template <typename T>
class SpscChannel {
 public:
  // The capacity is rounded up to a power of two.
  explicit SpscChannel(std::size_t capacity)
      : mask_(std::bit_ceil(std::max<std::size_t>(capacity, 1)) - 1),
        slots_(std::make_unique<Slot[]>(mask_ + 1)) {}
  ~SpscChannel() {
    while (try_pop()) {
    }
  }
  SpscChannel(const SpscChannel&) = delete;
  SpscChannel& operator=(const SpscChannel&) = delete;

  std::size_t capacity() const { return mask_ + 1; }

  // Producer only. Returns false when full; `value` is then left as it was.
  bool try_push(T&& value) {
    const std::size_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - cached_head_ > mask_) {
      cached_head_ = head_.load(std::memory_order_acquire);
      if (tail - cached_head_ > mask_) return false;
    }
    std::construct_at(slots_[tail & mask_].value(), std::move(value));
    // Sequentially consistent, like arm()'s store and load: either the consumer sees this item
    // before it sleeps, or this load sees its waker.
    tail_.store(tail + 1, std::memory_order_seq_cst);
    if (waker_.load(std::memory_order_seq_cst) != nullptr) {
      if (ChannelWaker* waker = waker_.exchange(nullptr, std::memory_order_acq_rel)) waker->wake();
    }
    return true;
  }

  // Consumer only.
  std::optional<T> try_pop() {
    const std::size_t head = head_.load(std::memory_order_relaxed);
    if (head == cached_tail_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (head == cached_tail_) return std::nullopt;
    }
    Slot& slot = slots_[head & mask_];
    std::optional<T> result(std::move(*slot.value()));
    std::destroy_at(slot.value());
    head_.store(head + 1, std::memory_order_release);
    return result;
  }

  // Consumer only: registers `waker` for the next push. Returns false, registering nothing,
  // when items are already there, so the consumer pops instead of suspending. When it returns
  // true, wake() is called exactly once unless disarm() takes the waker back first.
  bool arm(ChannelWaker& waker) {
    waker_.store(&waker, std::memory_order_seq_cst);
    if (head_.load(std::memory_order_relaxed) == tail_.load(std::memory_order_seq_cst)) return true;
    // Items arrived; if a producer already took the waker, its wake() is on the way.
    return !disarm();
  }

  // Consumer only: withdraws an armed waker (e.g. on timeout). Returns false when a producer
  // has already taken it, in which case its wake() is on the way and the waker must outlive it.
  bool disarm() { return waker_.exchange(nullptr, std::memory_order_acq_rel) != nullptr; }

  // Either side; a snapshot.
  std::size_t size() const {
    // Head first: it never passes the tail read after it.
    const std::size_t head = head_.load(std::memory_order_acquire);
    return tail_.load(std::memory_order_acquire) - head;
  }
  bool empty() const { return size() == 0; }

 private:
  struct Slot {
    alignas(T) std::byte storage[sizeof(T)];
    T* value() { return std::launder(reinterpret_cast<T*>(storage)); }
  };

  static constexpr std::size_t kCacheLine = 64;

  const std::size_t mask_;
  const std::unique_ptr<Slot[]> slots_;
  // Each side owns one line: its own position plus its cached copy of the other's.
  alignas(kCacheLine) std::atomic<std::size_t> tail_{0};
  std::size_t cached_head_ = 0;
  alignas(kCacheLine) std::atomic<std::size_t> head_{0};
  std::size_t cached_tail_ = 0;
  alignas(kCacheLine) std::atomic<ChannelWaker*> waker_{nullptr};
};

}  // namespace tern::engine
