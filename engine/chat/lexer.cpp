#include "engine/chat/lexer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace tern::engine::chat {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

void append_utf8(std::string& out, std::uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) {
    // Jinja normalizes every newline to "\n", in text and in string literals alike.
    source_.reserve(source.size());
    for (std::size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        source_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        source_ += source[i];
      }
    }
    if (!source_.empty() && source_.back() == '\n') source_.pop_back();
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < source_.size(); ++i) {
      if (source_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    std::size_t pos = 0;
    const std::size_t n = source_.size();
    while (pos < n) {
      std::size_t start = find_tag(pos);
      if (start == std::string::npos) {
        emit_text(pos, source_.substr(pos));
        break;
      }
      const char kind = source_[start + 1];
      std::size_t inner = start + 2;
      const char modifier = inner < n ? source_[inner] : '\0';
      std::string text = source_.substr(pos, start - pos);
      if (modifier == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
        ++inner;
      } else if (modifier == '+' && kind != '{') {
        ++inner;
      } else if (kind != '{') {
        lstrip_block_indent(text, pos);
      }
      emit_text(pos, std::move(text));
      if (kind == '#') {
        pos = skip_comment(start, inner);
        continue;
      }
      pos = lex_tag(start, inner, kind == '%');
    }
    Token end;
    end.kind = TokenKind::kEnd;
    end.position = position_of(n);
    tokens_.push_back(std::move(end));
    return std::move(tokens_);
  }

 private:
  SourcePosition position_of(std::size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    auto line = static_cast<int>(it - line_starts_.begin());
    return {line, static_cast<int>(offset - line_starts_[static_cast<std::size_t>(line - 1)]) + 1};
  }

  [[noreturn]] void fail(std::size_t offset, const std::string& message) const {
    throw TemplateError(message, position_of(offset));
  }

  std::size_t find_tag(std::size_t from) const {
    for (std::size_t i = source_.find('{', from); i != std::string::npos;
         i = source_.find('{', i + 1)) {
      if (i + 1 < source_.size()) {
        char next = source_[i + 1];
        if (next == '{' || next == '%' || next == '#') return i;
      }
    }
    return std::string::npos;
  }

  // lstrip_blocks: indentation before a block tag or comment goes when nothing else precedes
  // the tag on its line.
  void lstrip_block_indent(std::string& text, std::size_t text_start) const {
    std::size_t newline = text.rfind('\n');
    bool at_line_start =
        newline != std::string::npos || text_start == 0 || source_[text_start - 1] == '\n';
    if (!at_line_start) return;
    std::size_t line_begin = newline == std::string::npos ? 0 : newline + 1;
    for (std::size_t i = line_begin; i < text.size(); ++i) {
      if (text[i] != ' ' && text[i] != '\t') return;
    }
    text.resize(line_begin);
  }

  void emit_text(std::size_t offset, std::string text) {
    if (text.empty()) return;
    Token token;
    token.kind = TokenKind::kText;
    token.text = std::move(text);
    token.position = position_of(offset);
    tokens_.push_back(std::move(token));
  }

  // After a tag's closing delimiter: `-` strips all whitespace, `+` keeps it, and block tags and
  // comments otherwise lose one newline (trim_blocks).
  std::size_t after_tag(std::size_t pos, char modifier, bool trim_newline) const {
    if (modifier == '-') {
      while (pos < source_.size() && is_space(source_[pos])) ++pos;
    } else if (modifier != '+' && trim_newline && pos < source_.size() && source_[pos] == '\n') {
      ++pos;
    }
    return pos;
  }

  std::size_t skip_comment(std::size_t start, std::size_t inner) {
    std::size_t end = source_.find("#}", inner);
    if (end == std::string::npos) fail(start, "unclosed comment: expected '#}'");
    char modifier = end > inner ? source_[end - 1] : '\0';
    return after_tag(end + 2, modifier, true);
  }

  std::size_t lex_tag(std::size_t start, std::size_t pos, bool is_block) {
    const std::size_t first_token = tokens_.size();
    Token begin;
    begin.kind = is_block ? TokenKind::kBlockBegin : TokenKind::kVariableBegin;
    begin.position = position_of(start);
    tokens_.push_back(std::move(begin));
    const std::string_view close = is_block ? "%}" : "}}";
    int depth = 0;
    const std::size_t n = source_.size();
    while (true) {
      while (pos < n && is_space(source_[pos])) ++pos;
      if (pos >= n) {
        fail(start, std::string("unclosed tag: expected '") + std::string(close) + "'");
      }
      if (depth == 0) {
        std::string_view rest(source_.data() + pos, n - pos);
        char modifier = '\0';
        std::size_t close_at = std::string::npos;
        if (rest.starts_with(close)) {
          close_at = pos;
        } else if ((rest[0] == '-' || (rest[0] == '+' && is_block)) &&
                   rest.substr(1).starts_with(close)) {
          modifier = rest[0];
          close_at = pos + 1;
        }
        if (close_at != std::string::npos) {
          Token end;
          end.kind = is_block ? TokenKind::kBlockEnd : TokenKind::kVariableEnd;
          end.position = position_of(pos);
          tokens_.push_back(std::move(end));
          std::size_t next = after_tag(close_at + 2, modifier, is_block);
          if (is_block && tokens_.size() - first_token == 3 &&
              tokens_[first_token + 1].kind == TokenKind::kName &&
              tokens_[first_token + 1].text == "raw") {
            return lex_raw(first_token, next);
          }
          return next;
        }
      }
      pos = lex_token(pos, depth);
    }
  }

  // {% raw %}...{% endraw %}: the body is text, tags and all.
  std::size_t lex_raw(std::size_t first_token, std::size_t pos) {
    SourcePosition raw_position = tokens_[first_token].position;
    tokens_.resize(first_token);
    for (std::size_t at = source_.find("{%", pos); at != std::string::npos;
         at = source_.find("{%", at + 2)) {
      std::size_t i = at + 2;
      bool strip_before = i < source_.size() && source_[i] == '-';
      if (strip_before || (i < source_.size() && source_[i] == '+')) ++i;
      while (i < source_.size() && is_space(source_[i])) ++i;
      if (source_.compare(i, 6, "endraw") != 0) continue;
      i += 6;
      while (i < source_.size() && is_space(source_[i])) ++i;
      char modifier = '\0';
      if (i < source_.size() && (source_[i] == '-' || source_[i] == '+')) modifier = source_[i++];
      if (source_.compare(i, 2, "%}") != 0) continue;
      std::string body = source_.substr(pos, at - pos);
      if (strip_before) {
        while (!body.empty() && is_space(body.back())) body.pop_back();
      }
      emit_text(pos, std::move(body));
      return after_tag(i + 2, modifier, true);
    }
    throw TemplateError("unclosed raw block: expected '{% endraw %}'", raw_position);
  }

  std::size_t lex_token(std::size_t pos, int& depth) {
    const std::size_t n = source_.size();
    const char c = source_[pos];
    Token token;
    token.position = position_of(pos);
    if (is_name_start(c)) {
      std::size_t end = pos;
      while (end < n && is_name_char(source_[end])) ++end;
      token.kind = TokenKind::kName;
      token.text = source_.substr(pos, end - pos);
      tokens_.push_back(std::move(token));
      return end;
    }
    if (is_digit(c)) return lex_number(pos, std::move(token));
    if (c == '\'' || c == '"') return lex_string(pos, std::move(token));
    static constexpr std::array<std::string_view, 6> kTwoChar = {
        "//", "**", "==", "!=", "<=", ">="};
    for (std::string_view op : kTwoChar) {
      if (source_.compare(pos, 2, op) == 0) {
        token.kind = TokenKind::kOperator;
        token.text = std::string(op);
        tokens_.push_back(std::move(token));
        return pos + 2;
      }
    }
    static constexpr std::string_view kOneChar = "+-*/%~<>=()[]{},.:|";
    if (kOneChar.find(c) == std::string_view::npos) {
      fail(pos, std::string("unexpected character '") + c + "' in tag");
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    token.kind = TokenKind::kOperator;
    token.text = std::string(1, c);
    tokens_.push_back(std::move(token));
    return pos + 1;
  }

  std::size_t lex_number(std::size_t pos, Token token) {
    const std::size_t n = source_.size();
    std::size_t end = pos;
    bool is_float = false;
    auto digits = [&] {
      while (end < n && (is_digit(source_[end]) || source_[end] == '_')) ++end;
    };
    digits();
    if (end + 1 < n && source_[end] == '.' && is_digit(source_[end + 1])) {
      is_float = true;
      ++end;
      digits();
    }
    if (end < n && (source_[end] == 'e' || source_[end] == 'E')) {
      std::size_t exponent = end + 1;
      if (exponent < n && (source_[exponent] == '+' || source_[exponent] == '-')) ++exponent;
      if (exponent < n && is_digit(source_[exponent])) {
        is_float = true;
        end = exponent;
        digits();
      }
    }
    std::string spelling;
    for (std::size_t i = pos; i < end; ++i) {
      if (source_[i] != '_') spelling += source_[i];
    }
    token.text = spelling;
    if (is_float) {
      token.kind = TokenKind::kFloat;
      token.floating = std::strtod(spelling.c_str(), nullptr);
    } else {
      token.kind = TokenKind::kInteger;
      auto result =
          std::from_chars(spelling.data(), spelling.data() + spelling.size(), token.integer);
      if (result.ec != std::errc()) fail(pos, "integer literal out of range: " + spelling);
    }
    tokens_.push_back(std::move(token));
    return end;
  }

  // Escapes as Python's unicode-escape decodes them; an unknown escape keeps its backslash.
  std::size_t lex_string(std::size_t pos, Token token) {
    const std::size_t n = source_.size();
    const char quote = source_[pos];
    std::string value;
    std::size_t i = pos + 1;
    while (true) {
      if (i >= n) fail(pos, "unterminated string literal");
      char c = source_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= n) fail(pos, "unterminated string literal");
      char e = source_[i + 1];
      i += 2;
      switch (e) {
        case 'n':
          value += '\n';
          break;
        case 't':
          value += '\t';
          break;
        case 'r':
          value += '\r';
          break;
        case '\\':
          value += '\\';
          break;
        case '\'':
          value += '\'';
          break;
        case '"':
          value += '"';
          break;
        case 'a':
          value += '\a';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'v':
          value += '\v';
          break;
        case '\n':
          break;
        case 'x':
        case 'u':
        case 'U': {
          std::size_t width = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          std::uint32_t code_point = 0;
          if (i + width > n) fail(i - 2, "truncated \\" + std::string(1, e) + " escape");
          for (std::size_t k = 0; k < width; ++k) {
            char h = source_[i + k];
            int digit = is_digit(h)              ? h - '0'
                        : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                        : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                                 : -1;
            if (digit < 0) fail(i - 2, "truncated \\" + std::string(1, e) + " escape");
            code_point = code_point * 16 + static_cast<std::uint32_t>(digit);
          }
          if (code_point > 0x10FFFF) fail(i - 2, "escape out of Unicode range");
          i += width;
          append_utf8(value, code_point);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            std::uint32_t code_point = static_cast<std::uint32_t>(e - '0');
            for (int k = 0; k < 2 && i < n && source_[i] >= '0' && source_[i] <= '7'; ++k) {
              code_point = code_point * 8 + static_cast<std::uint32_t>(source_[i++] - '0');
            }
            append_utf8(value, code_point);
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    token.kind = TokenKind::kString;
    token.text = std::move(value);
    tokens_.push_back(std::move(token));
    return i + 1;
  }

  std::string source_;
  std::vector<std::size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace tern::engine::chat
