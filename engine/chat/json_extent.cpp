#include "engine/chat/json_extent.h"

#include <cstring>

namespace tern::engine::chat {
namespace {

// Outside strings a JSON value holds only structure, whitespace, numbers and the literals; any
// other byte (`<` of a closing marker above all) shows the JSON is broken, and saying so at once
// lets the parser fall back without holding the rest of the output.
bool may_appear_outside_string(char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return c != '\0' && std::strchr(" \t\r\n{}[]:,-+.", c) != nullptr;
}

}  // namespace

void JsonExtent::reset() {
  open_brackets_.clear();
  in_string_ = false;
  escaped_ = false;
}

JsonExtent::Status JsonExtent::scan(std::string_view text, std::size_t& position) {
  for (; position < text.size(); ++position) {
    const char c = text[position];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '{' || c == '[') {
      if (open_brackets_.size() == max_depth_) return Status::invalid;
      open_brackets_.push_back(c == '{' ? '}' : ']');
    } else if (open_brackets_.empty()) {
      return Status::invalid;  // the value must open with a bracket
    } else if (c == '}' || c == ']') {
      if (c != open_brackets_.back()) return Status::invalid;
      open_brackets_.pop_back();
      if (open_brackets_.empty()) {
        ++position;
        return Status::complete;
      }
    } else if (c == '"') {
      in_string_ = true;
    } else if (!may_appear_outside_string(c)) {
      return Status::invalid;
    }
  }
  return Status::incomplete;
}

}  // namespace tern::engine::chat
