#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "engine/expected.h"

namespace tern::engine {

// How much of the waiting queue requests may take. A request costs one sequence per prompt and
// sample (prompts x n), and it is charged for all of them before any is queued.
struct AdmissionLimits {
  std::int32_t max_waiting_sequences = 1024;
  std::int32_t max_sequences_per_request = 256;
  // The most of the queue one client (an API key, or an address) may hold, so that one client
  // flooding with fan-out requests cannot lock the others out.
  double max_waiting_share_per_client = 0.5;

  std::int32_t client_cap() const;
};

namespace detail {
struct ClientWaiting {
  std::atomic<std::int32_t> sequences{0};
};
}  // namespace detail

// Sequences a request holds in the waiting queue. Each leaves with release() as it is first
// scheduled or finished; whatever is left goes back when the slots are destroyed.
class WaitingSlots {
 public:
  WaitingSlots() = default;
  WaitingSlots(WaitingSlots&& other) noexcept;
  WaitingSlots& operator=(WaitingSlots&& other) noexcept;
  WaitingSlots(const WaitingSlots&) = delete;
  WaitingSlots& operator=(const WaitingSlots&) = delete;
  ~WaitingSlots();

  // Splits `count` of these slots off into their own holder.
  WaitingSlots take(std::int32_t count);
  void release(std::int32_t count = 1);
  std::int32_t held() const { return held_; }

 private:
  friend class Admission;
  WaitingSlots(std::atomic<std::int32_t>* total, std::atomic<std::int64_t>* released,
               std::shared_ptr<detail::ClientWaiting> client, std::int32_t held)
      : total_(total), released_(released), client_(std::move(client)), held_(held) {}

  std::atomic<std::int32_t>* total_ = nullptr;
  std::atomic<std::int64_t>* released_ = nullptr;
  std::shared_ptr<detail::ClientWaiting> client_;
  std::int32_t held_ = 0;
};

// Admission control for one engine's waiting queue: what a request costs is checked against the
// limits before anything is queued. A request that can never fit is an invalid_field error
// naming the limit; one that cannot fit now is overloaded, with a retry time estimated from how
// fast the queue has been draining. reserve() may be called from any thread; tick() from one.
class Admission {
 public:
  explicit Admission(const AdmissionLimits& limits);
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // `client` names who asks (empty: anonymous, which counts as one client).
  Expected<WaitingSlots> reserve(std::int32_t prompts, std::int32_t samples_per_prompt,
                                 std::string_view client);

  // Called from the engine loop: refreshes the drain rate behind retry estimates.
  void tick(std::chrono::steady_clock::time_point now);

  std::int32_t waiting() const { return total_.load(std::memory_order_relaxed); }
  const AdmissionLimits& limits() const { return limits_; }
  double drain_rate() const { return drain_rate_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<detail::ClientWaiting> client_entry(std::string_view client);
  int retry_after_s(std::int32_t excess) const;

  AdmissionLimits limits_;
  std::atomic<std::int32_t> total_{0};
  std::atomic<std::int64_t> released_{0};  // sequences that ever left the queue
  std::atomic<double> drain_rate_{0};      // sequences leaving per second, smoothed

  std::mutex clients_mutex_;
  std::unordered_map<std::string, std::weak_ptr<detail::ClientWaiting>> clients_;
  std::size_t prune_at_ = 64;

  // tick() only.
  std::chrono::steady_clock::time_point window_start_{};
  std::int64_t window_released_ = 0;
};

}  // namespace tern::engine
