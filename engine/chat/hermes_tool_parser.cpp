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

std::optional<ParsedToolCall> HermesToolParser::read_call() const {
  return read_tool_call_object(
      std::string_view(buffer_).substr(json_begin_, json_end_ - json_begin_), tool_names_,
      arguments_keys);
}

void HermesToolParser::advance(ParsedOutput& out) {
  for (;;) {
    const std::string_view held = buffer_;  // re-taken after every erase
    Step step = Step::done;
    switch (state_) {
      case State::content:
        if (!take_content(buffer_, skip_space_, {open_marker}, out).found()) return;
        state_ = State::body;
        scan_ = open_marker.size();
        json_started_ = false;
        continue;
      case State::body:
        if (!json_started_) {
          scan_ = skip_space(held, scan_);
          if (scan_ == held.size()) return;
          if (held[scan_] != '{') {
            scan_ = open_marker.size();
            state_ = State::broken;
            continue;
          }
          json_started_ = true;
          start_json(scan_);
        }
        // Most often an invalid JSON lacks a bracket and its bad byte is the `<` of
        // `</tool_call>`.
        step = scan_json(held);
        if (step == Step::done) state_ = State::close;
        break;
      case State::close:
        step = expect_close(held, close_marker, false, out);
        break;
      case State::broken:
        if (!release_broken(close_marker, out)) return;
        continue;
    }
    if (step == Step::wait) return;
    if (step == Step::broken) state_ = State::broken;
  }
}

}  // namespace tern::engine::chat
