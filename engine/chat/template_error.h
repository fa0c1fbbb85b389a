#pragma once

// Inside the lexer, parser and interpreter a failure unwinds as a TemplateError; ChatTemplate
// catches it at its boundary and hands the caller an Error value. A failure raised without a
// position (by a filter, say) takes the position of the innermost node that was evaluating.
#include <string>
#include <utility>

namespace tern::engine::chat {

struct SourcePosition {
  int line = 0;    // 1-based; 0 means not yet known
  int column = 0;  // 1-based, in bytes
};

class TemplateError {
 public:
  explicit TemplateError(std::string message, SourcePosition position = {})
      : message_(std::move(message)), position_(position) {}

  const std::string& message() const { return message_; }
  const SourcePosition& position() const { return position_; }
  bool has_position() const { return position_.line > 0; }
  void set_position(SourcePosition position) { position_ = position; }

  // "chat template: line L, column C: message"
  std::string describe() const {
    std::string out = "chat template: ";
    if (has_position()) {
      out += "line " + std::to_string(position_.line) + ", column " +
             std::to_string(position_.column) + ": ";
    }
    return out + message_;
  }

 private:
  std::string message_;
  SourcePosition position_;
};

}  // namespace tern::engine::chat
