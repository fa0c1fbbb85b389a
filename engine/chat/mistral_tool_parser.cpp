#include "engine/chat/mistral_tool_parser.h"

#include <array>
#include <optional>

#include "engine/chat/held_call_text.h"
#include "engine/chat/marker_scanner.h"
#include "engine/chat/tool_call_json.h"

namespace tern::engine::chat {
namespace {

constexpr std::string_view calls_marker = "[TOOL_CALLS]";
constexpr std::string_view arguments_marker = "[ARGS]";
constexpr std::string_view call_id_marker = "[CALL_ID]";
constexpr std::array<std::string_view, 1> arguments_keys = {"arguments"};
// Function names are identifiers; a longer run is prose that happened to follow the marker.
constexpr std::size_t max_name_bytes = 256;

bool is_name_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// The elements of a JSON array known to be complete, as views; nullopt when an element is not
// an object. Only brackets matter here: read_tool_call_object validates each element.
std::optional<std::vector<std::string_view>> array_elements(std::string_view array) {
  std::vector<std::string_view> elements;
  std::size_t position = skip_space(array, 1);
  while (position < array.size() && array[position] == '{') {
    JsonExtent extent;
    const std::size_t begin = position;
    if (extent.scan(array, position) != JsonExtent::Status::complete) return std::nullopt;
    elements.push_back(array.substr(begin, position - begin));
    position = skip_space(array, position);
    if (position < array.size() && array[position] == ',')
      position = skip_space(array, position + 1);
  }
  if (position + 1 != array.size() || array[position] != ']') return std::nullopt;
  return elements;
}

}  // namespace

void MistralToolParser::feed(std::string_view text, ParsedOutput& out) {
  buffer_.append(text);
  advance(out);
}

void MistralToolParser::reject(std::size_t end, ParsedOutput& out) {
  out.content.append(buffer_, 0, end);
  buffer_.erase(0, end);
  state_ = State::content;
  scan_ = 0;
}

void MistralToolParser::accept(std::size_t end) {
  buffer_.erase(0, end);
  state_ = State::content;
  scan_ = 0;
  skip_space_ = true;
}

void MistralToolParser::report_json_calls(std::size_t end, ParsedOutput& out) {
  const std::string_view json = std::string_view(buffer_).substr(json_begin_, end - json_begin_);
  std::vector<std::string_view> elements;
  if (json.front() == '{') {
    elements.push_back(json);
  } else if (auto found = array_elements(json); found && is_valid_json(json)) {
    elements = std::move(*found);
  }
  std::vector<ParsedToolCall> calls;
  for (std::string_view element : elements) {
    std::optional<ParsedToolCall> call =
        read_tool_call_object(element, tool_names_, arguments_keys);
    if (!call) break;
    calls.push_back(std::move(*call));
  }
  if (calls.empty() || calls.size() != elements.size()) {
    reject(end, out);
    return;
  }
  for (ParsedToolCall& call : calls) out.add_call(std::move(call));
  accept(end);
}

bool MistralToolParser::read_name_end(std::string_view held, ParsedOutput& out) {
  const std::string_view rest = held.substr(scan_);
  if (state_ == State::name) name_end_ = scan_;
  if (rest.starts_with(arguments_marker)) {
    scan_ += arguments_marker.size();
    state_ = State::before_arguments;
  } else if (state_ == State::name && rest.starts_with(call_id_marker)) {
    scan_ += call_id_marker.size();
    call_id_begin_ = scan_;
    state_ = State::call_id;
  } else if (is_marker_prefix(rest, arguments_marker) ||
             (state_ == State::name && is_marker_prefix(rest, call_id_marker))) {
    return false;
  } else {
    reject(name_begin_, out);
  }
  return true;
}

void MistralToolParser::advance(ParsedOutput& out) {
  for (;;) {
    const std::string_view held = buffer_;  // re-taken after every erase
    switch (state_) {
      case State::content: {
        if (!take_content(buffer_, skip_space_, {calls_marker}, out).found()) return;
        state_ = State::after_marker;
        scan_ = calls_marker.size();
        break;
      }
      case State::after_marker:
        scan_ = skip_space(held, scan_);
        if (scan_ == held.size()) return;
        if (held[scan_] == '[' || held[scan_] == '{') {
          json_begin_ = scan_;
          json_.reset();
          state_ = State::json_calls;
        } else {
          name_begin_ = scan_;
          state_ = State::name;
        }
        break;
      case State::json_calls: {
        const JsonExtent::Status status = json_.scan(held, scan_);
        if (status == JsonExtent::Status::incomplete) return;
        if (status == JsonExtent::Status::invalid) {
          reject(scan_, out);  // the bad byte may start the next `[TOOL_CALLS]`
        } else {
          report_json_calls(scan_, out);
        }
        break;
      }
      case State::name:
      case State::call_id: {
        const std::size_t begin = state_ == State::name ? name_begin_ : call_id_begin_;
        while (scan_ < held.size() && is_name_byte(held[scan_])) ++scan_;
        // Not a name: the marker is content, and so is what follows it (from the same place
        // however the text was split).
        if (scan_ - begin > max_name_bytes || (scan_ == begin && scan_ < held.size())) {
          reject(name_begin_, out);
          break;
        }
        if (scan_ == held.size() || !read_name_end(held, out)) return;
        break;
      }
      case State::before_arguments:
        scan_ = skip_space(held, scan_);
        if (scan_ == held.size()) return;
        if (held[scan_] != '{') {
          reject(scan_, out);
          break;
        }
        json_begin_ = scan_;
        json_.reset();
        state_ = State::arguments;
        break;
      case State::arguments: {
        const JsonExtent::Status status = json_.scan(held, scan_);
        if (status == JsonExtent::Status::incomplete) return;
        if (status == JsonExtent::Status::invalid) {
          reject(scan_, out);
          break;
        }
        const std::string_view name = held.substr(name_begin_, name_end_ - name_begin_);
        std::optional<std::string> arguments =
            read_tool_arguments(held.substr(json_begin_, scan_ - json_begin_));
        if (!arguments || !is_known_tool(name, tool_names_)) {
          reject(scan_, out);
          break;
        }
        out.add_call(ParsedToolCall{std::string(name), std::move(*arguments)});
        accept(scan_);
        break;
      }
    }
  }
}

void MistralToolParser::finish(ParsedOutput& out) {
  advance(out);
  // Whatever is still held is a marker's beginning or a call cut off: content either way.
  out.content.append(buffer_);
  buffer_.clear();
  state_ = State::content;
  scan_ = 0;
  skip_space_ = false;
}

}  // namespace tern::engine::chat
