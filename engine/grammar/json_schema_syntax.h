#pragma once

// The pieces of JSON text that the JSON Schema front end builds its grammars from: punctuation
// (with whitespace between tokens when asked for), strings, keys and any JSON value.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "engine/grammar/grammar_builder.h"

namespace tern::engine::grammar {

// The compact JSON spelling of a string: quotes, '"', '\\' and control characters escaped, the
// rest as it is.
std::string json_quoted(std::string_view text);

class JsonSyntax {
 public:
  // When whitespace is allowed, each gap between tokens holds at most this many bytes of it
  // (enough to indent 15 levels by two spaces after a newline), so that a model cannot pad an
  // answer forever.
  static constexpr std::int32_t kMaxWhitespaceRun = 32;
  // Strings bounded to more characters than this call a rule per character.
  static constexpr std::int32_t kInlineLength = 256;

  JsonSyntax(GrammarBuilder& builder, bool whitespace)
      : builder_(builder), whitespace_(whitespace) {}

  GrammarBuilder& builder() { return builder_; }

  ExprId begin_object() { return token_then_space("{"); }
  ExprId end_object() { return space_then_token("}"); }
  ExprId empty_object();
  ExprId begin_array() { return token_then_space("["); }
  ExprId end_array() { return space_then_token("]"); }
  ExprId empty_array();
  ExprId comma();
  ExprId colon();

  // One character inside a JSON string: itself, or an escape. \u escapes of surrogates are not
  // written, so each escape is one code point (as minLength/maxLength count them) and the text
  // is valid Unicode; characters beyond the BMP are written as themselves.
  ExprId string_character();
  // A quoted string of min_length to max_length characters (max may be kUnbounded).
  ExprId string(std::int32_t min_length, std::int32_t max_length);
  ExprId quoted(ExprId content);
  // The member key `name`, spelled as json_quoted does, then the colon.
  ExprId key_and_colon(std::string_view name);

  // Any JSON value, object or array at any depth (one rule, built once).
  ExprId any_value();
  ExprId any_object();
  ExprId any_array();

 private:
  ExprId space();
  ExprId token_then_space(std::string_view token);
  ExprId space_then_token(std::string_view token);
  void define_any_value();

  GrammarBuilder& builder_;
  bool whitespace_;
  std::optional<ExprId> space_;
  std::optional<ExprId> string_character_;
  std::optional<RuleId> string_character_rule_;
  // One rule per (min, max) length: every string of a schema with those bounds calls it.
  std::map<std::pair<std::int32_t, std::int32_t>, RuleId> string_rules_;
  std::optional<RuleId> any_value_;
  std::optional<RuleId> any_object_;
  std::optional<RuleId> any_array_;
};

}  // namespace tern::engine::grammar
