#include "engine/chat/deepseek_v3_tool_parser.h"

#include <optional>

#include "engine/chat/held_call_text.h"
#include "engine/chat/marker_scanner.h"
#include "engine/chat/tool_call_json.h"

namespace tern::engine::chat {
namespace {

// The bars are U+FF5C and the spaces U+2581, as DeepSeek's tokenizer spells them.
constexpr std::string_view calls_begin = "<｜tool▁calls▁begin｜>";
constexpr std::string_view calls_end = "<｜tool▁calls▁end｜>";
constexpr std::string_view call_begin = "<｜tool▁call▁begin｜>";
constexpr std::string_view call_end = "<｜tool▁call▁end｜>";
constexpr std::string_view separator = "<｜tool▁sep｜>";
constexpr std::string_view v3_call_type = "function";
// The name and the fence before the arguments: longer means this is no call.
constexpr std::size_t max_header_bytes = 512;

// The function name in a V3 header (`NAME\n```json\n`), or "" when the header is not one.
std::string_view name_in_header(std::string_view header) {
  header = trim_space(header);
  for (std::string_view fence : {std::string_view("```json"), std::string_view("```")}) {
    if (header.ends_with(fence)) {
      header = trim_space(header.substr(0, header.size() - fence.size()));
      break;
    }
  }
  for (char c : header) {
    if (is_space(c) || c == '`') return {};
  }
  return header;
}

}  // namespace

void DeepseekV3ToolParser::break_call(std::size_t search_from) {
  state_ = State::broken;
  scan_ = search_from;
}

std::optional<ParsedToolCall> DeepseekV3ToolParser::read_call() const {
  const std::string_view held = buffer_;
  const std::string_view prefix =
      trim_space(held.substr(call_begin.size(), separator_begin_ - call_begin.size()));
  const std::string_view header_name =
      name_in_header(held.substr(header_begin_, json_begin_ - header_begin_));
  const std::string_view header =
      trim_space(held.substr(header_begin_, json_begin_ - header_begin_));
  // V3 writes the call's type before the separator and the name after it; V3.1 writes the name
  // before it and the arguments right after.
  std::string_view name;
  if (prefix == v3_call_type && !header_name.empty()) {
    name = header_name;
  } else if (header.empty() || header == "```json" || header == "```") {
    name = prefix;
  }
  if (name.empty() || !is_known_tool(name, tool_names_)) return std::nullopt;
  std::optional<std::string> arguments =
      read_tool_arguments(held.substr(json_begin_, json_end_ - json_begin_));
  if (!arguments) return std::nullopt;
  return ParsedToolCall{std::string(name), std::move(*arguments)};
}

void DeepseekV3ToolParser::advance(ParsedOutput& out) {
  for (;;) {
    const std::string_view held = buffer_;  // re-taken after every erase
    switch (state_) {
      case State::content: {
        const MarkerMatch match =
            take_content(buffer_, skip_space_, {calls_begin, call_begin, calls_end}, out);
        if (!match.found()) return;
        if (match.marker == 1) {
          state_ = State::prefix;
          scan_ = call_begin.size();
        } else {
          // The section's own markers carry nothing; the space around them separates calls.
          buffer_.erase(0, match.marker == 0 ? calls_begin.size() : calls_end.size());
          skip_space_ = true;
        }
        break;
      }
      case State::prefix: {
        // A separator later than a header's length away means this is no call; the rule looks
        // only at the text, so it holds however the text was split.
        const std::size_t limit = call_begin.size() + max_header_bytes;
        const MarkerMatch match = find_marker(held, scan_, {separator, call_end});
        if (!match.found()) {
          scan_ = match.position;
          if (scan_ <= limit) return;
          break_call(call_begin.size());
        } else if (match.marker == 1 || match.position > limit) {
          break_call(call_begin.size());
        } else {
          separator_begin_ = match.position;
          header_begin_ = scan_ = match.position + separator.size();
          state_ = State::header;
        }
        break;
      }
      case State::header:
        // Names and fences hold neither `{` nor `<`: a `<` is a marker, so the call is broken.
        while (scan_ < held.size() && held[scan_] != '{' && held[scan_] != '<') ++scan_;
        if (scan_ - header_begin_ > max_header_bytes) {
          break_call(header_begin_);
          break;
        }
        if (scan_ == held.size()) return;
        if (held[scan_] == '<') {
          break_call(scan_);
          break;
        }
        start_json(scan_);
        state_ = State::body;
        break;
      case State::body: {
        const Step step = scan_json(held);
        if (step == Step::wait) return;
        state_ = step == Step::done ? State::trailer : State::broken;
        break;
      }
      case State::trailer: {
        const Step step = expect_close(held, call_end, true, out);
        if (step == Step::wait) return;
        if (step == Step::broken) state_ = State::broken;
        break;
      }
      case State::broken:
        if (!release_broken(call_end, out)) return;
        break;
    }
  }
}

}  // namespace tern::engine::chat
