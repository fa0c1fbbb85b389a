#pragma once

// Splits a Server-Sent Events byte stream into events as the bytes arrive. Only `data:` lines
// matter here; comments (keepalives) and other fields are skipped.
#include <cstddef>
#include <string>
#include <string_view>

namespace tern::loadgen {

class SseEvents {
 public:
  void append(std::string_view bytes) { pending_.append(bytes); }

  // The next complete event's data (its data lines joined by '\n'); false when no complete
  // event is buffered. Events without data lines (comments) are skipped.
  bool next(std::string& data);

  void clear() {
    pending_.clear();
    consumed_ = 0;
  }

 private:
  std::string pending_;
  std::size_t consumed_ = 0;  // bytes of pending_ already returned
};

}  // namespace tern::loadgen
