#include "engine/admission.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tern::engine {

std::int32_t AdmissionLimits::client_cap() const {
  const double share = std::clamp(max_waiting_share_per_client, 0.0, 1.0);
  const auto cap = static_cast<std::int32_t>(std::floor(share * max_waiting_sequences));
  return std::clamp(cap, 1, std::max(max_waiting_sequences, 1));
}

WaitingSlots::WaitingSlots(WaitingSlots&& other) noexcept
    : total_(other.total_),
      released_(other.released_),
      client_(std::move(other.client_)),
      held_(std::exchange(other.held_, 0)) {}

WaitingSlots& WaitingSlots::operator=(WaitingSlots&& other) noexcept {
  if (this != &other) {
    release(held_);
    total_ = other.total_;
    released_ = other.released_;
    client_ = std::move(other.client_);
    held_ = std::exchange(other.held_, 0);
  }
  return *this;
}

WaitingSlots::~WaitingSlots() {
  release(held_);
}

WaitingSlots WaitingSlots::take(std::int32_t count) {
  count = std::min(count, held_);
  held_ -= count;
  return WaitingSlots(total_, released_, client_, count);
}

void WaitingSlots::release(std::int32_t count) {
  count = std::min(count, held_);
  if (count <= 0) return;
  held_ -= count;
  total_->fetch_sub(count, std::memory_order_relaxed);
  released_->fetch_add(count, std::memory_order_relaxed);
  if (client_) client_->sequences.fetch_sub(count, std::memory_order_relaxed);
}

Admission::Admission(const AdmissionLimits& limits) : limits_(limits) {}

std::shared_ptr<detail::ClientWaiting> Admission::client_entry(std::string_view client) {
  const std::lock_guard lock(clients_mutex_);
  auto [it, inserted] = clients_.try_emplace(std::string(client));
  std::shared_ptr<detail::ClientWaiting> entry = it->second.lock();
  if (!entry) {
    entry = std::make_shared<detail::ClientWaiting>();
    it->second = entry;
  }
  // Clients come and go; forget those with nothing in flight once the map has doubled.
  if (clients_.size() >= prune_at_) {
    std::erase_if(clients_, [](const auto& each) { return each.second.expired(); });
    prune_at_ = std::max<std::size_t>(64, 2 * clients_.size());
  }
  return entry;
}

int Admission::retry_after_s(std::int32_t excess) const {
  // Until the queue has been seen draining, assume one sequence a second.
  const double rate = std::max(drain_rate(), 1.0);
  const double seconds = std::ceil(static_cast<double>(std::max(excess, 1)) / rate);
  return static_cast<int>(std::clamp(seconds, 1.0, 60.0));
}

Expected<WaitingSlots> Admission::reserve(std::int32_t prompts, std::int32_t samples_per_prompt,
                                          std::string_view client) {
  const std::int64_t cost =
      static_cast<std::int64_t>(prompts) * static_cast<std::int64_t>(samples_per_prompt);
  const std::string_view field = samples_per_prompt > 1 ? "n" : "prompt";
  auto never_fits = [&](std::int32_t limit, std::string_view name) {
    return Error{fmt::format("{}: this request asks for {} sequences ({} prompt(s) x n = {}), "
                             "more than the {} that {} allows",
                             field, cost, prompts, samples_per_prompt, limit, name),
                 ErrorKind::invalid_field, std::string(field)};
  };
  if (cost > limits_.max_sequences_per_request) {
    return never_fits(limits_.max_sequences_per_request, "max_sequences_per_request");
  }
  if (cost > limits_.max_waiting_sequences) {
    return never_fits(limits_.max_waiting_sequences, "max_waiting_sequences");
  }
  const std::int32_t client_cap = limits_.client_cap();
  if (cost > client_cap) {
    return never_fits(client_cap, "max_waiting_share_per_client of the waiting queue");
  }
  const auto count = static_cast<std::int32_t>(cost);

  const std::int32_t before = total_.fetch_add(count, std::memory_order_relaxed);
  if (before + count > limits_.max_waiting_sequences) {
    total_.fetch_sub(count, std::memory_order_relaxed);
    const std::int32_t excess = before + count - limits_.max_waiting_sequences;
    return Error{fmt::format("overloaded: {} sequences are waiting and this request needs {} "
                             "more (max_waiting_sequences {})",
                             before, count, limits_.max_waiting_sequences),
                 ErrorKind::overloaded, "", retry_after_s(excess)};
  }
  std::shared_ptr<detail::ClientWaiting> entry = client_entry(client);
  const std::int32_t client_before = entry->sequences.fetch_add(count, std::memory_order_relaxed);
  if (client_before + count > client_cap) {
    entry->sequences.fetch_sub(count, std::memory_order_relaxed);
    total_.fetch_sub(count, std::memory_order_relaxed);
    const std::int32_t excess = client_before + count - client_cap;
    return Error{fmt::format("overloaded: this client already has {} sequences waiting and this "
                             "request needs {} more; one client may hold {} "
                             "(max_waiting_share_per_client)",
                             client_before, count, client_cap),
                 ErrorKind::overloaded, "", retry_after_s(excess)};
  }
  return WaitingSlots(&total_, &released_, std::move(entry), count);
}

void Admission::tick(std::chrono::steady_clock::time_point now) {
  using namespace std::chrono;
  if (window_start_ == steady_clock::time_point{}) {
    window_start_ = now;
    window_released_ = released_.load(std::memory_order_relaxed);
    return;
  }
  const double elapsed = duration<double>(now - window_start_).count();
  if (elapsed < 1.0) return;
  const std::int64_t released = released_.load(std::memory_order_relaxed);
  if (elapsed > 5.0) {
    // The engine slept (no work): that idle time says nothing of how fast it drains.
    window_start_ = now;
    window_released_ = released;
    return;
  }
  const double rate = static_cast<double>(released - window_released_) / elapsed;
  const double previous = drain_rate_.load(std::memory_order_relaxed);
  drain_rate_.store(previous == 0 ? rate : 0.5 * previous + 0.5 * rate, std::memory_order_relaxed);
  window_start_ = now;
  window_released_ = released;
}

}  // namespace tern::engine
