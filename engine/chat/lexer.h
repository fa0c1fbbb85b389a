#pragma once

// Splits template source into text and the tokens inside {{ }} and {% %} tags. Whitespace control
// happens here, as Jinja's lexer does it, configured the way transformers and @huggingface/jinja
// render chat templates: trim_blocks (drop the newline after a block tag or comment),
// lstrip_blocks (drop the indentation before one), `-` on a tag to strip all whitespace on that
// side, `+` to keep it, and one trailing newline of the source removed.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/template_error.h"

namespace tern::engine::chat {

enum class TokenKind : std::uint8_t {
  kText,
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,
  kEnd,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;  // text, name, decoded string literal, operator, or number spelling
  std::int64_t integer = 0;
  double floating = 0;
  SourcePosition position;
};

// Throws TemplateError with a position on malformed input (unclosed tag, bad character, ...).
std::vector<Token> tokenize(std::string_view source);

}  // namespace tern::engine::chat
