#include "service/sse.h"

#include <algorithm>

namespace tern::service {

void append_sse_data(std::string& out, std::string_view payload) {
  std::size_t start = 0;
  while (true) {
    const std::size_t end = payload.find_first_of("\r\n", start);
    out += "data: ";
    if (end == std::string_view::npos) {
      out.append(payload.substr(start));
      break;
    }
    out.append(payload.substr(start, end - start));
    out += '\n';
    start = end +
            (payload[end] == '\r' && end + 1 < payload.size() && payload[end + 1] == '\n' ? 2 : 1);
  }
  out += "\n\n";
}

void append_sse_comment(std::string& out, std::string_view text) {
  // A comment is one line; a line break inside would end it early.
  out += ": ";
  for (const char c : text) out += (c == '\n' || c == '\r') ? ' ' : c;
  out += "\n\n";
}

std::string SseBuffer::take_for_write() {
  in_flight_ += queued_.size();
  std::string bytes;
  bytes.swap(queued_);
  return bytes;
}

void SseBuffer::written(std::size_t bytes, Clock::time_point now) {
  in_flight_ -= bytes < in_flight_ ? bytes : in_flight_;
  update(now);
}

std::optional<SseBuffer::Clock::time_point> SseBuffer::drop_deadline() const {
  if (!full_since_) return std::nullopt;
  return *full_since_ + slow_client_timeout_;
}

bool SseBuffer::should_drop(Clock::time_point now) const {
  return full_since_ && now >= *full_since_ + slow_client_timeout_;
}

void SseBuffer::update(Clock::time_point now) {
  peak_bytes_ = std::max(peak_bytes_, pending_bytes());
  if (!full()) {
    full_since_.reset();
  } else if (!full_since_) {
    full_since_ = now;
  }
}

}  // namespace tern::service
