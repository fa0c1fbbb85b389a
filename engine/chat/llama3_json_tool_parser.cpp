#include "engine/chat/llama3_json_tool_parser.h"

#include <array>
#include <optional>

#include "engine/chat/marker_scanner.h"
#include "engine/chat/tool_call_json.h"

namespace tern::engine::chat {
namespace {

constexpr std::string_view python_tag = "<|python_tag|>";
constexpr std::array<std::string_view, 2> arguments_keys = {"parameters", "arguments"};

}  // namespace

void Llama3JsonToolParser::feed(std::string_view text, ParsedOutput& out) {
  if (state_ == State::content) {
    out.content.append(text);
    return;
  }
  buffer_.append(text);
  advance(out);
}

void Llama3JsonToolParser::give_up(ParsedOutput& out) {
  out.content.append(buffer_);
  buffer_.clear();
  calls_.clear();
  state_ = State::content;
}

void Llama3JsonToolParser::advance(ParsedOutput& out) {
  const std::string_view held = buffer_;  // not erased until the state becomes content
  for (;;) {
    switch (state_) {
      case State::content:
        return;
      case State::start: {
        scan_ = skip_space(held, scan_);
        if (scan_ == held.size()) return;
        const std::string_view rest = held.substr(scan_);
        if (rest.front() == '{') {
          state_ = State::before_call;
        } else if (rest.starts_with(python_tag)) {
          scan_ += python_tag.size();
          state_ = State::before_call;
        } else if (is_marker_prefix(rest, python_tag)) {
          return;
        } else {
          give_up(out);
          return;
        }
        break;
      }
      case State::before_call:
        scan_ = skip_space(held, scan_);
        if (scan_ == held.size()) return;
        if (held[scan_] != '{') {
          give_up(out);
          return;
        }
        json_begin_ = scan_;
        json_.reset();
        state_ = State::in_call;
        break;
      case State::in_call: {
        const JsonExtent::Status status = json_.scan(held, scan_);
        if (status == JsonExtent::Status::incomplete) return;
        std::optional<ParsedToolCall> call;
        if (status == JsonExtent::Status::complete) {
          call = read_tool_call_object(held.substr(json_begin_, scan_ - json_begin_), tool_names_,
                                       arguments_keys);
        }
        if (!call) {
          give_up(out);
          return;
        }
        calls_.push_back(std::move(*call));
        state_ = State::after_call;
        break;
      }
      case State::after_call:
        scan_ = skip_space(held, scan_);
        if (scan_ == held.size()) return;
        if (held[scan_] != ';') {
          give_up(out);
          return;
        }
        ++scan_;
        state_ = State::before_call;
        break;
    }
  }
}

void Llama3JsonToolParser::finish(ParsedOutput& out) {
  advance(out);
  // A trailing `;` with no call after it is tolerated; a call cut off is not a call.
  const bool calls_complete =
      (state_ == State::after_call || state_ == State::before_call) && !calls_.empty();
  if (calls_complete) {
    for (ParsedToolCall& call : calls_) out.add_call(std::move(call));
  } else {
    out.content.append(buffer_);
  }
  buffer_.clear();
  calls_.clear();
  scan_ = 0;
  state_ = State::start;
}

}  // namespace tern::engine::chat
