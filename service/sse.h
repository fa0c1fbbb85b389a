#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tern::service {

// Server-Sent Events framing. A payload with line breaks becomes several `data:` lines, so any
// text frames correctly; JSON from JsonWriter has none and takes the fast path.
void append_sse_data(std::string& out, std::string_view payload);
// A comment line (": text"), which clients ignore and proxies count as traffic.
void append_sse_comment(std::string& out, std::string_view text);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

// The bytes one stream has produced but the client has not yet taken, and the slow-client
// policy over them. The buffer is full once `bound_bytes` are pending: its producer then stops
// taking events (so the engine pauses the request) until the client catches up, which bounds
// the bytes per stream by `bound_bytes` plus one event. A stream that stays full for
// `slow_client_timeout` is dropped (and its request cancelled). Bytes count from append()
// until written() reports them sent.
class SseBuffer {
 public:
  using Clock = std::chrono::steady_clock;

  SseBuffer(std::size_t bound_bytes, Clock::duration slow_client_timeout)
      : bound_bytes_(bound_bytes), slow_client_timeout_(slow_client_timeout) {}

  // Where producers append; call appended() afterwards so the bound is checked.
  std::string& queue() { return queued_; }
  void appended(Clock::time_point now) { update(now); }

  // Moves the queued bytes out for one write; they stay pending until written().
  std::string take_for_write();
  void written(std::size_t bytes, Clock::time_point now);

  bool empty() const { return queued_.empty(); }
  std::size_t pending_bytes() const { return queued_.size() + in_flight_; }
  // The most bytes that were pending at once, as of the last appended().
  std::size_t peak_bytes() const { return peak_bytes_; }
  // Checked before each event: a full buffer takes no more until the client catches up.
  bool full() const { return pending_bytes() >= bound_bytes_; }
  // When the stream must be dropped if it is still full; nullopt when it is not full.
  std::optional<Clock::time_point> drop_deadline() const;
  bool should_drop(Clock::time_point now) const;

 private:
  void update(Clock::time_point now);

  std::size_t bound_bytes_;
  Clock::duration slow_client_timeout_;
  std::string queued_;
  std::size_t in_flight_ = 0;
  std::size_t peak_bytes_ = 0;
  std::optional<Clock::time_point> full_since_;
};

}  // namespace tern::service
