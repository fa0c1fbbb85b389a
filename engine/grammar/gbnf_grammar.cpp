#include "engine/grammar/gbnf_grammar.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/utf8.h"

namespace tern::engine::grammar {
namespace {

// Far above any real grammar's counts; the builder caps the automaton the repetitions unroll
// into, this only keeps the numbers themselves in range.
constexpr std::int64_t kMaxRepeatCount = 100'000;
constexpr char32_t kMaxCodePoint = 0x10FFFF;
// Parentheses recurse in the parser; no real grammar nests anywhere near this deep.
constexpr int kMaxGroupDepth = 200;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_line_break(char c) {
  return c == '\n' || c == '\r';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The length of the UTF-8 sequence at text[i] and its code point, or 0 when the bytes there
// are not UTF-8 (overlong, surrogate, past U+10FFFF, truncated).
std::size_t decode_utf8(std::string_view text, std::size_t i, char32_t& out) {
  if (i >= text.size()) return 0;
  const Utf8Step step = next_utf8(text, i);
  if (!step.valid) return 0;
  out = step.code_point;
  return step.length;
}

// Reads a GBNF text straight into a GrammarBuilder, remembering where each rule is defined and
// first used so that errors found only at the end can still name a place.
class GbnfParser {
 public:
  GbnfParser(std::string_view text, CompileDeadline deadline) : text_(text), builder_(deadline) {}

  Expected<std::shared_ptr<const Grammar>> compile() {
    skip_space_and_line_breaks();
    while (!at_end()) {
      if (builder_.out_of_time()) return GrammarBuilder::timed_out();
      if (Status parsed = parse_rule(); !parsed) return parsed.error();
      skip_space_and_line_breaks();
    }
    if (!definitions_.contains("root")) return gbnf_error("missing root rule");
    for (const auto& [name, offset] : uses_) {
      if (!definitions_.contains(name)) return error_at("undefined rule \"" + name + "\"", offset);
    }
    Expected<std::shared_ptr<const Grammar>> built = builder_.build(builder_.rule("root"));
    if (!built && built.error().message == kCompileTimedOut) return built.error();
    if (!built) return gbnf_error(built.error().message);
    return built;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool at_line_break() const { return !at_end() && is_line_break(peek()); }

  static Error gbnf_error(std::string message) {
    return Error{std::move(message), ErrorKind::invalid_field};
  }
  // "line L, column C" of a byte offset, both 1-based; the column counts bytes.
  std::string position(std::size_t offset) const {
    const std::string_view before = text_.substr(0, offset);
    const auto line = 1 + std::count(before.begin(), before.end(), '\n');
    const std::size_t line_start = before.rfind('\n');
    const std::size_t column =
        line_start == std::string_view::npos ? offset + 1 : offset - line_start;
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }
  Error error_at(const std::string& message, std::size_t offset) const {
    return gbnf_error(message + " at " + position(offset));
  }
  // What stands at `offset`, for "unexpected ..." messages.
  std::string shown_at(std::size_t offset) const {
    if (offset >= text_.size()) return "end of input";
    char32_t c = 0;
    const std::size_t length = std::max<std::size_t>(decode_utf8(text_, offset, c), 1);
    std::string shown(1, '"');
    shown.append(text_.substr(offset, length));
    shown += '"';
    return shown;
  }

  // Spaces, tabs and comments, but not line breaks.
  void skip_blank() {
    while (!at_end()) {
      if (peek() == ' ' || peek() == '\t') {
        ++pos_;
      } else if (peek() == '#') {
        while (!at_end() && !at_line_break()) ++pos_;
      } else {
        return;
      }
    }
  }

  void skip_space_and_line_breaks() {
    for (skip_blank(); at_line_break(); skip_blank()) ++pos_;
  }

  // At a line break outside parentheses: whether the expression goes on on a later line. It
  // does when that line (blank and comment lines aside) starts with `|`, or is indented and
  // does not define a rule.
  bool expression_continues() const {
    std::size_t at = pos_;
    while (at < text_.size()) {
      if (is_line_break(text_[at])) {
        ++at;
        continue;
      }
      const std::size_t line_start = at;
      while (at < text_.size() && (text_[at] == ' ' || text_[at] == '\t')) ++at;
      if (at == text_.size()) return false;
      if (text_[at] == '#') {
        while (at < text_.size() && !is_line_break(text_[at])) ++at;
        continue;
      }
      if (is_line_break(text_[at])) continue;
      if (text_[at] == '|') return true;
      if (at == line_start) return false;
      std::size_t name_end = at;
      while (name_end < text_.size() && is_name_char(text_[name_end])) ++name_end;
      if (name_end == at) return true;
      while (name_end < text_.size() && (text_[name_end] == ' ' || text_[name_end] == '\t')) {
        ++name_end;
      }
      return text_.substr(name_end, 3) != "::=";
    }
    return false;
  }

  // Past the space after an element: line breaks too inside parentheses, and outside them
  // where the expression continues.
  void skip_separator(bool nested) {
    skip_blank();
    if (at_line_break() && (nested || expression_continues())) skip_space_and_line_breaks();
  }

  std::string parse_name() {
    const std::size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  Status parse_rule() {
    const std::size_t name_start = pos_;
    const std::string name = parse_name();
    if (name.empty()) return error_at("expected a rule name, found " + shown_at(pos_), pos_);
    if (definitions_.contains(name)) {
      return error_at("rule \"" + name + "\" defined twice", name_start);
    }
    definitions_.emplace(name, name_start);
    skip_blank();
    if (text_.substr(pos_, 3) != "::=") {
      return error_at("expected \"::=\" after rule name \"" + name + "\", found " + shown_at(pos_),
                      pos_);
    }
    pos_ += 3;
    skip_space_and_line_breaks();
    ExprId body = 0;
    if (Status parsed = parse_alternates(body, false, 0); !parsed) return parsed;
    if (!at_end() && !at_line_break()) {
      return error_at("unexpected " + shown_at(pos_) + " in rule \"" + name + "\"", pos_);
    }
    builder_.define(builder_.rule(name), body);
    return {};
  }

  Status parse_alternates(ExprId& out, bool nested, int depth) {
    std::vector<ExprId> alternatives;
    while (true) {
      ExprId sequence = 0;
      if (Status parsed = parse_sequence(sequence, nested, depth); !parsed) return parsed;
      alternatives.push_back(sequence);
      if (peek() != '|' || at_end()) break;
      ++pos_;
      skip_space_and_line_breaks();
    }
    out =
        alternatives.size() == 1 ? alternatives.front() : builder_.choice(std::move(alternatives));
    return {};
  }

  Status parse_sequence(ExprId& out, bool nested, int depth) {
    std::vector<ExprId> items;
    while (!at_end()) {
      const std::size_t start = pos_;
      const char c = peek();
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (items.empty()) {
          return error_at("quantifier \"" + std::string(1, c) + "\" has nothing to repeat", start);
        }
        if (Status repeated = parse_postfix(items.back()); !repeated) return repeated;
        skip_separator(nested);
        continue;
      }
      ExprId item = 0;
      if (c == '"') {
        if (Status parsed = parse_literal(item); !parsed) return parsed;
      } else if (c == '[') {
        if (Status parsed = parse_class(item); !parsed) return parsed;
      } else if (c == '.') {
        ++pos_;
        item = builder_.char_class({}, true);
      } else if (c == '(') {
        if (depth >= kMaxGroupDepth) {
          return error_at("parentheses nested deeper than " + std::to_string(kMaxGroupDepth),
                          start);
        }
        ++pos_;
        skip_space_and_line_breaks();
        if (Status parsed = parse_alternates(item, true, depth + 1); !parsed) return parsed;
        if (at_end()) return error_at("unbalanced \"(\"", start);
        if (peek() != ')') return error_at("expected \")\", found " + shown_at(pos_), pos_);
        ++pos_;
      } else if (is_name_char(c)) {
        const std::string name = parse_name();
        uses_.emplace_back(name, start);
        item = builder_.reference(builder_.rule(name));
      } else {
        break;
      }
      items.push_back(item);
      skip_separator(nested);
    }
    if (items.empty()) {
      out = builder_.empty();
    } else {
      out = items.size() == 1 ? items.front() : builder_.sequence(std::move(items));
    }
    return {};
  }

  Status parse_postfix(ExprId& item) {
    const char c = peek();
    if (c != '{') {
      ++pos_;
      const std::int32_t min = c == '+' ? 1 : 0;
      const std::int32_t max = c == '?' ? 1 : GrammarBuilder::kUnbounded;
      item = builder_.repeat(item, min, max);
      return {};
    }
    const std::size_t start = pos_;
    ++pos_;
    skip_blank();
    std::int64_t min = 0;
    if (!parse_count(min)) {
      return error_at("expected a number in repetition, found " + shown_at(pos_), pos_);
    }
    std::int64_t max = min;
    bool unbounded = false;
    skip_blank();
    if (peek() == ',') {
      ++pos_;
      skip_blank();
      unbounded = !parse_count(max);
      skip_blank();
    }
    if (peek() != '}') {
      return error_at("expected \"}\" in repetition, found " + shown_at(pos_), pos_);
    }
    ++pos_;
    const std::string spelled(text_.substr(start, pos_ - start));
    if (min > kMaxRepeatCount || (!unbounded && max > kMaxRepeatCount)) {
      return error_at("repetition count too large in \"" + spelled + "\"", start);
    }
    if (unbounded) max = GrammarBuilder::kUnbounded;
    if (min > max) return error_at("bad repetition \"" + spelled + "\" (min above max)", start);
    item = builder_.repeat(item, static_cast<std::int32_t>(min), static_cast<std::int32_t>(max));
    return {};
  }

  bool parse_count(std::int64_t& value) {
    const std::size_t start = pos_;
    value = 0;
    while (!at_end() && is_digit(peek())) {
      value = std::min<std::int64_t>(value * 10 + (peek() - '0'), std::int64_t{1} << 40);
      ++pos_;
    }
    return pos_ > start;
  }

  Status parse_literal(ExprId& out) {
    const std::size_t start = pos_;
    ++pos_;
    std::string bytes;
    while (true) {
      if (at_end() || at_line_break()) return error_at("unterminated literal", start);
      if (peek() == '"') {
        ++pos_;
        break;
      }
      char32_t c = 0;
      if (Status read = parse_char(c); !read) return read;
      append_utf8(bytes, c);
    }
    out = builder_.literal(bytes);
    return {};
  }

  Status parse_class(ExprId& out) {
    const std::size_t start = pos_;
    ++pos_;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    std::vector<CodepointRange> ranges;
    while (true) {
      if (at_end() || at_line_break()) return error_at("unterminated character class", start);
      if (peek() == ']') {
        ++pos_;
        break;
      }
      const std::size_t item_start = pos_;
      char32_t first = 0;
      if (Status read = parse_char(first); !read) return read;
      char32_t last = first;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size() && !is_line_break(peek(1))) {
        ++pos_;
        if (Status read = parse_char(last); !read) return read;
        if (last < first) {
          return error_at(
              "bad range \"" + std::string(text_.substr(item_start, pos_ - item_start)) + "\"",
              item_start);
        }
      }
      ranges.push_back({first, last});
    }
    out = builder_.char_class(std::move(ranges), negated);
    return {};
  }

  // One code point of a literal or class: an escape, or a character spelled in UTF-8.
  Status parse_char(char32_t& out) {
    if (peek() == '\\') return parse_escape(out);
    const std::size_t length = decode_utf8(text_, pos_, out);
    if (length == 0) return error_at("invalid UTF-8", pos_);
    pos_ += length;
    return {};
  }

  Status parse_escape(char32_t& out) {
    const std::size_t start = pos_;
    ++pos_;
    const auto bad_escape = [&] {
      return error_at("bad escape \"" + std::string(text_.substr(start, pos_ - start)) + "\"",
                      start);
    };
    if (at_end() || at_line_break()) return bad_escape();
    const char c = peek();
    ++pos_;
    int digits = 0;
    switch (c) {
      case 'n':
        out = '\n';
        return {};
      case 'r':
        out = '\r';
        return {};
      case 't':
        out = '\t';
        return {};
      case '\\':
      case '"':
      case '[':
      case ']':
        out = static_cast<unsigned char>(c);
        return {};
      case 'x':
        digits = 2;
        break;
      case 'u':
        digits = 4;
        break;
      case 'U':
        digits = 8;
        break;
      default: {
        // Show the whole character after the backslash, however many bytes it takes.
        char32_t ignored = 0;
        pos_ = start + 1 + std::max<std::size_t>(decode_utf8(text_, start + 1, ignored), 1);
        return bad_escape();
      }
    }
    std::uint64_t value = 0;
    for (int k = 0; k < digits; ++k) {
      const int digit = hex_value(peek());
      if (at_end() || digit < 0) return bad_escape();
      value = value * 16 + static_cast<std::uint64_t>(digit);
      ++pos_;
    }
    if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
      return error_at(
          "invalid code point \"" + std::string(text_.substr(start, pos_ - start)) + "\"", start);
    }
    out = static_cast<char32_t>(value);
    return {};
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  GrammarBuilder builder_;
  std::map<std::string, std::size_t> definitions_;         // name -> offset of its definition
  std::vector<std::pair<std::string, std::size_t>> uses_;  // in the order they appear
};

}  // namespace

Expected<std::shared_ptr<const Grammar>> compile_gbnf(std::string_view text,
                                                      CompileDeadline deadline) {
  return GbnfParser(text, deadline).compile();
}

}  // namespace tern::engine::grammar
