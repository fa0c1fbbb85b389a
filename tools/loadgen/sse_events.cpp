#include "tools/loadgen/sse_events.h"

namespace tern::loadgen {

bool SseEvents::next(std::string& data) {
  for (;;) {
    const std::size_t end = pending_.find("\n\n", consumed_);
    if (end == std::string::npos) {
      // Keep the incomplete tail only; what came before it is done with.
      pending_.erase(0, consumed_);
      consumed_ = 0;
      return false;
    }
    std::string_view event(pending_.data() + consumed_, end - consumed_);
    consumed_ = end + 2;
    data.clear();
    bool has_data = false;
    while (!event.empty()) {
      const std::size_t newline = event.find('\n');
      std::string_view line = event.substr(0, newline);
      event = newline == std::string_view::npos ? std::string_view{} : event.substr(newline + 1);
      if (line.ends_with('\r')) line.remove_suffix(1);
      if (!line.starts_with("data:")) continue;  // a comment, or a field we do not use
      line.remove_prefix(5);
      if (line.starts_with(' ')) line.remove_prefix(1);
      if (has_data) data += '\n';
      data.append(line);
      has_data = true;
    }
    if (has_data) return true;
  }
}

}  // namespace tern::loadgen
