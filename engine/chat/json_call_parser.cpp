#include "engine/chat/json_call_parser.h"

#include "engine/chat/held_call_text.h"
#include "engine/chat/marker_scanner.h"

namespace tern::engine::chat {

void JsonCallParser::feed(std::string_view text, ParsedOutput& out) {
  buffer_.append(text);
  advance(out);
}

void JsonCallParser::finish(ParsedOutput& out) {
  advance(out);
  if (after_json()) {
    // The output stopped after a complete JSON body but before the closing marker (max_tokens,
    // or a stop string): the call stands when it is valid.
    end_call(buffer_.size(), out);
  } else {
    out.content.append(buffer_);
  }
  buffer_.clear();
  to_content();
  scan_ = 0;
  skip_space_ = false;
}

void JsonCallParser::start_json(std::size_t at) {
  json_begin_ = scan_ = at;
  json_.reset();
}

JsonCallParser::Step JsonCallParser::scan_json(std::string_view held) {
  const JsonExtent::Status status = json_.scan(held, scan_);
  if (status == JsonExtent::Status::incomplete) return Step::wait;
  if (status == JsonExtent::Status::invalid) {
    scan_ = json_begin_;
    return Step::broken;
  }
  json_end_ = scan_;
  return Step::done;
}

JsonCallParser::Step JsonCallParser::expect_close(std::string_view held,
                                                  std::string_view close_marker, bool fenced,
                                                  ParsedOutput& out) {
  while (scan_ < held.size() && (is_space(held[scan_]) || (fenced && held[scan_] == '`'))) ++scan_;
  const std::string_view rest = held.substr(scan_);
  if (rest.starts_with(close_marker)) {
    end_call(scan_ + close_marker.size(), out);
    return Step::done;
  }
  if (rest.empty() || is_marker_prefix(rest, close_marker)) return Step::wait;
  scan_ = json_end_;
  return Step::broken;
}

bool JsonCallParser::release_broken(std::string_view close_marker, ParsedOutput& out) {
  if (!release_broken_call(buffer_, scan_, close_marker, out)) return false;
  to_content();
  scan_ = 0;
  return true;
}

void JsonCallParser::end_call(std::size_t end, ParsedOutput& out) {
  std::optional<ParsedToolCall> call = read_call();
  skip_space_ = call.has_value();
  if (call) {
    out.add_call(std::move(*call));
  } else {
    out.content.append(buffer_, 0, end);
  }
  buffer_.erase(0, end);
  to_content();
  scan_ = 0;
}

}  // namespace tern::engine::chat
