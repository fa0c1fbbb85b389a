#include "engine/chat/hermes_tool_parser.h"

#include <array>
#include <optional>

#include "engine/chat/held_call_text.h"
#include "engine/chat/marker_scanner.h"
#include "engine/chat/tool_call_json.h"

namespace tern::engine::chat {
namespace {

constexpr std::string_view open_marker = "<tool_call>";
constexpr std::string_view close_marker = "</tool_call>";
constexpr std::array<std::string_view, 1> arguments_keys = {"arguments"};

}  // namespace

void HermesToolParser::feed(std::string_view text, ParsedOutput& out) {
  buffer_.append(text);
  advance(out);
}

void HermesToolParser::break_call(std::size_t search_from) {
  state_ = State::broken;
  scan_ = search_from;
}

void HermesToolParser::end_call(std::size_t end, ParsedOutput& out) {
  std::optional<ParsedToolCall> call =
      read_tool_call_object(std::string_view(buffer_).substr(json_begin_, json_end_ - json_begin_),
                            tool_names_, arguments_keys);
  if (call) {
    out.add_call(std::move(*call));
  } else {
    out.content.append(buffer_, 0, end);
  }
  skip_space_ = call.has_value();
  buffer_.erase(0, end);
  state_ = State::content;
  scan_ = 0;
}

void HermesToolParser::advance(ParsedOutput& out) {
  for (;;) {
    const std::string_view held = buffer_;  // re-taken after every erase
    switch (state_) {
      case State::content: {
        if (!take_content(buffer_, skip_space_, {open_marker}, out).found()) return;
        state_ = State::body;
        scan_ = open_marker.size();
        json_started_ = false;
        break;
      }
      case State::body: {
        if (!json_started_) {
          scan_ = skip_space(held, scan_);
          if (scan_ == held.size()) return;
          if (held[scan_] != '{') {
            break_call(open_marker.size());
            break;
          }
          json_started_ = true;
          json_begin_ = scan_;
          json_.reset();
        }
        const JsonExtent::Status status = json_.scan(held, scan_);
        if (status == JsonExtent::Status::incomplete) return;
        if (status == JsonExtent::Status::invalid) {
          // Most often the JSON lacks a bracket and the bad byte is the `<` of `</tool_call>`.
          break_call(json_begin_);
          break;
        }
        json_end_ = scan_;
        state_ = State::close;
        break;
      }
      case State::close: {
        scan_ = skip_space(held, scan_);
        const std::string_view rest = held.substr(scan_);
        if (rest.starts_with(close_marker)) {
          end_call(scan_ + close_marker.size(), out);
          break;
        }
        if (rest.empty() || is_marker_prefix(rest, close_marker)) return;
        break_call(json_end_);
        break;
      }
      case State::broken:
        if (!release_broken_call(buffer_, scan_, close_marker, out)) return;
        state_ = State::content;
        scan_ = 0;
        break;
    }
  }
}

void HermesToolParser::finish(ParsedOutput& out) {
  advance(out);
  if (state_ == State::close) {
    // The output stopped after a complete JSON body but before `</tool_call>` (max_tokens, or a
    // stop string): the call stands when it is valid.
    end_call(buffer_.size(), out);
  } else {
    out.content.append(buffer_);
  }
  buffer_.clear();
  state_ = State::content;
  scan_ = 0;
  skip_space_ = false;
}

}  // namespace tern::engine::chat
