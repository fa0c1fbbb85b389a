#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <utility>

namespace tern::engine {

// Bounded lock-free queue from many producers (the service's threads) to one consumer (an engine
// thread): Vyukov's ring, where each slot's sequence number says whose turn it is. Producers
// never block: a full queue makes try_push fail, which the service answers as overload. The
// consumer sleeps in wait() on a futex-backed counter that producers bump, so it neither spins
// nor misses a push.
template <typename T>
class MpscQueue {
 public:
  // The capacity is rounded up to a power of two.
  explicit MpscQueue(std::size_t capacity)
      : mask_(std::bit_ceil(std::max<std::size_t>(capacity, 2)) - 1),
        slots_(std::make_unique<Slot[]>(mask_ + 1)) {
    for (std::size_t i = 0; i <= mask_; ++i) slots_[i].turn.store(i, std::memory_order_relaxed);
  }
  ~MpscQueue() {
    while (try_pop()) {
    }
  }
  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  std::size_t capacity() const { return mask_ + 1; }

  // Any thread. Returns false when the queue is full; `value` is then left as it was.
  bool try_push(T&& value) {
    std::size_t position = enqueue_position_.load(std::memory_order_relaxed);
    Slot* slot = nullptr;
    for (;;) {
      slot = &slots_[position & mask_];
      const std::size_t turn = slot->turn.load(std::memory_order_acquire);
      const auto lag = static_cast<std::intptr_t>(turn) - static_cast<std::intptr_t>(position);
      if (lag == 0) {
        if (enqueue_position_.compare_exchange_weak(position, position + 1,
                                                    std::memory_order_relaxed)) {
          break;
        }
      } else if (lag < 0) {
        return false;  // the consumer has not freed this slot from the previous lap yet
      } else {
        position = enqueue_position_.load(std::memory_order_relaxed);
      }
    }
    std::construct_at(slot->value(), std::move(value));
    slot->turn.store(position + 1, std::memory_order_release);
    // The bump comes after the publish, so a consumer that saw the old count and then an empty
    // queue is either woken here or finds the count changed before it sleeps.
    pushes_.fetch_add(1, std::memory_order_seq_cst);
    pushes_.notify_one();
    return true;
  }

  // Consumer only. Empty also while the oldest claimed slot is still being written.
  std::optional<T> try_pop() {
    const std::size_t position = dequeue_position_.load(std::memory_order_relaxed);
    Slot& slot = slots_[position & mask_];
    if (slot.turn.load(std::memory_order_acquire) != position + 1) return std::nullopt;
    std::optional<T> result(std::move(*slot.value()));
    std::destroy_at(slot.value());
    slot.turn.store(position + mask_ + 1, std::memory_order_release);
    dequeue_position_.store(position + 1, std::memory_order_relaxed);
    return result;
  }

  // Consumer only: a mark to pass to wait(), taken before the consumer checks for work, so that a
  // push or wake() that comes after the check and before the sleep still ends the sleep.
  std::uint32_t epoch() const { return pushes_.load(std::memory_order_seq_cst); }

  // Consumer only. Sleeps unless something was pushed or wake() was called since `since` was
  // taken; it can return with the queue still empty, so callers loop around their own exit
  // condition: take the epoch, check for work, then wait.
  void wait(std::uint32_t since) {
    if (!empty()) return;
    pushes_.wait(since, std::memory_order_seq_cst);
  }

  // Any thread: ends a wait() without pushing, e.g. to make the consumer notice shutdown.
  void wake() {
    pushes_.fetch_add(1, std::memory_order_seq_cst);
    pushes_.notify_one();
  }

  // Consumer only.
  bool empty() const {
    const std::size_t position = dequeue_position_.load(std::memory_order_relaxed);
    return slots_[position & mask_].turn.load(std::memory_order_acquire) != position + 1;
  }

  // Any thread; a snapshot for metrics and admission decisions, exact only when quiet.
  std::size_t size_approx() const {
    const std::size_t pushed = enqueue_position_.load(std::memory_order_relaxed);
    const std::size_t popped = dequeue_position_.load(std::memory_order_relaxed);
    return pushed > popped ? pushed - popped : 0;
  }

 private:
  struct Slot {
    std::atomic<std::size_t> turn{0};
    alignas(T) std::byte storage[sizeof(T)];
    T* value() { return std::launder(reinterpret_cast<T*>(storage)); }
  };

  // Producers hammer the enqueue position; keep it off the consumer's cache line.
  static constexpr std::size_t kCacheLine = 64;

  const std::size_t mask_;
  const std::unique_ptr<Slot[]> slots_;
  alignas(kCacheLine) std::atomic<std::size_t> enqueue_position_{0};
  alignas(kCacheLine) std::atomic<std::size_t> dequeue_position_{0};
  alignas(kCacheLine) std::atomic<std::uint32_t> pushes_{0};
};

}  // namespace tern::engine
