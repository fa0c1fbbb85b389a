#include "engine/json_syntax.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <vector>

namespace tern {
namespace {

class SyntaxScanner {
 public:
  explicit SyntaxScanner(std::string_view text) : text_(text) {}

  // The offset of the first error, or nullopt when the whole text is one valid JSON value.
  std::optional<std::size_t> scan() {
    // Containers live on an explicit stack, so hostile nesting cannot overflow the call stack:
    // 'a' is an open array, 'o' an open object.
    std::vector<char> stack;
    bool expect_value = true;
    for (;;) {
      skip_space();
      if (expect_value) {
        if (at_end()) return position_;
        const char c = text_[position_];
        if (c == '[' || c == '{') {
          ++position_;
          skip_space();
          if (!at_end() && text_[position_] == (c == '[' ? ']' : '}')) {
            ++position_;
            expect_value = false;
            continue;
          }
          stack.push_back(c == '[' ? 'a' : 'o');
          if (c == '{' && !member_key()) return position_;
          continue;
        }
        if (!scalar()) return position_;
        expect_value = false;
        continue;
      }
      if (stack.empty()) break;
      if (at_end()) return position_;
      const char c = text_[position_];
      if (c == (stack.back() == 'a' ? ']' : '}')) {
        ++position_;
        stack.pop_back();
        continue;
      }
      if (c != ',') return position_;
      ++position_;
      skip_space();
      if (stack.back() == 'o' && !member_key()) return position_;
      expect_value = true;
    }
    if (!at_end()) return position_;
    return std::nullopt;
  }

 private:
  bool at_end() const { return position_ >= text_.size(); }

  void skip_space() {
    while (!at_end() && std::strchr(" \t\r\n", text_[position_]) != nullptr) ++position_;
  }

  // A key and its colon, leaving the position at the value.
  bool member_key() {
    if (at_end() || text_[position_] != '"' || !string()) return false;
    skip_space();
    if (at_end() || text_[position_] != ':') return false;
    ++position_;
    return true;
  }

  bool scalar() {
    const char c = text_[position_];
    if (c == '"') return string();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    for (std::string_view literal : {"true", "false", "null"}) {
      if (text_.substr(position_, literal.size()) == literal) {
        position_ += literal.size();
        return true;
      }
    }
    return false;
  }

  bool string() {
    ++position_;  // the opening quote
    while (!at_end()) {
      const auto c = static_cast<unsigned char>(text_[position_]);
      if (c == '"') {
        ++position_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        ++position_;
        if (at_end()) return false;
        const char escape = text_[position_];
        if (escape == 'u') {
          for (int i = 1; i <= 4; ++i) {
            if (position_ + i >= text_.size() ||
                !std::isxdigit(static_cast<unsigned char>(text_[position_ + i]))) {
              return false;
            }
          }
          position_ += 4;
        } else if (std::strchr("\"\\/bfnrt", escape) == nullptr) {
          return false;
        }
      }
      ++position_;
    }
    return false;
  }

  bool digits() {
    const std::size_t start = position_;
    while (!at_end() && text_[position_] >= '0' && text_[position_] <= '9') ++position_;
    return position_ > start;
  }

  bool number() {
    if (text_[position_] == '-') ++position_;
    if (!at_end() && text_[position_] == '0') {
      ++position_;
    } else if (!digits()) {
      return false;
    }
    if (!at_end() && text_[position_] == '.') {
      ++position_;
      if (!digits()) return false;
    }
    if (!at_end() && (text_[position_] == 'e' || text_[position_] == 'E')) {
      ++position_;
      if (!at_end() && (text_[position_] == '+' || text_[position_] == '-')) ++position_;
      if (!digits()) return false;
    }
    return true;
  }

  std::string_view text_;
  std::size_t position_ = 0;
};

}  // namespace

std::optional<std::size_t> find_json_syntax_error(std::string_view text) {
  return SyntaxScanner(text).scan();
}

std::string describe_json_error(std::string_view text, std::string_view message) {
  const auto offset = find_json_syntax_error(text);
  if (!offset) return std::string(message);
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < *offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("{} at line {}, column {}", message, line, column);
}

}  // namespace tern
