#include "engine/grammar/json_schema_syntax.h"

#include <vector>

#include "engine/grammar/json_schema_numbers.h"

namespace tern::engine::grammar {

std::string json_quoted(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string quoted = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        quoted += "\\\"";
        break;
      case '\\':
        quoted += "\\\\";
        break;
      case '\b':
        quoted += "\\b";
        break;
      case '\f':
        quoted += "\\f";
        break;
      case '\n':
        quoted += "\\n";
        break;
      case '\r':
        quoted += "\\r";
        break;
      case '\t':
        quoted += "\\t";
        break;
      default:
        if (byte < 0x20) {
          quoted += "\\u00";
          quoted += kHex[byte >> 4];
          quoted += kHex[byte & 0xf];
        } else {
          quoted += c;
        }
    }
  }
  quoted += '"';
  return quoted;
}

ExprId JsonSyntax::space() {
  if (!space_) {
    space_ =
        builder_.repeat(builder_.char_class({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}),
                        0, kMaxWhitespaceRun);
  }
  return *space_;
}

ExprId JsonSyntax::token_then_space(std::string_view token) {
  if (!whitespace_) return builder_.literal(token);
  return builder_.sequence({builder_.literal(token), space()});
}

ExprId JsonSyntax::space_then_token(std::string_view token) {
  if (!whitespace_) return builder_.literal(token);
  return builder_.sequence({space(), builder_.literal(token)});
}

ExprId JsonSyntax::empty_object() {
  if (!whitespace_) return builder_.literal("{}");
  return builder_.sequence({builder_.literal("{"), space(), builder_.literal("}")});
}

ExprId JsonSyntax::empty_array() {
  if (!whitespace_) return builder_.literal("[]");
  return builder_.sequence({builder_.literal("["), space(), builder_.literal("]")});
}

ExprId JsonSyntax::comma() {
  if (!whitespace_) return builder_.literal(",");
  return builder_.sequence({space(), builder_.literal(","), space()});
}

ExprId JsonSyntax::colon() {
  if (!whitespace_) return builder_.literal(":");
  return builder_.sequence({space(), builder_.literal(":"), space()});
}

ExprId JsonSyntax::string_character() {
  if (string_character_) return *string_character_;
  const ExprId unescaped = builder_.char_class({{'"', '"'}, {'\\', '\\'}, {0, 0x1f}}, true);
  const ExprId hex = builder_.char_class({{'0', '9'}, {'a', 'f'}, {'A', 'F'}});
  // Four hex digits outside D800-DFFF.
  const ExprId not_surrogate = builder_.choice(
      {builder_.sequence(
           {builder_.char_class({{'0', '9'}, {'a', 'c'}, {'A', 'C'}, {'e', 'f'}, {'E', 'F'}}),
            builder_.repeat(hex, 3, 3)}),
       builder_.sequence({builder_.char_class({{'d', 'd'}, {'D', 'D'}}),
                          builder_.char_class({{'0', '7'}}), builder_.repeat(hex, 2, 2)})});
  const ExprId escape = builder_.sequence(
      {builder_.literal("\\"),
       builder_.choice({builder_.char_class({{'"', '"'},
                                             {'\\', '\\'},
                                             {'/', '/'},
                                             {'b', 'b'},
                                             {'f', 'f'},
                                             {'n', 'n'},
                                             {'r', 'r'},
                                             {'t', 't'}}),
                        builder_.sequence({builder_.literal("u"), not_surrogate})})});
  string_character_ = builder_.choice({unescaped, escape});
  return *string_character_;
}

ExprId JsonSyntax::quoted(ExprId content) {
  return builder_.sequence({builder_.literal("\""), content, builder_.literal("\"")});
}

ExprId JsonSyntax::string(std::int32_t min_length, std::int32_t max_length) {
  // A rule, not an inline expression: every string with these bounds shares its automaton
  // states, so the vocabulary is walked for them once, whatever follows each (tokens that run
  // past the closing quote are checked against the real stack when masks are made).
  const auto key = std::make_pair(min_length, max_length);
  if (const auto found = string_rules_.find(key); found != string_rules_.end()) {
    return builder_.reference(found->second);
  }
  // A bounded repeat is unrolled, and one character inline is a hundred automaton states: past
  // a few dozen characters each one is a call of a rule instead, so that maxLength reaches the
  // hundreds of thousands.
  const bool long_bounded = max_length != GrammarBuilder::kUnbounded && max_length > kInlineLength;
  if (long_bounded && !string_character_rule_) {
    string_character_rule_ = builder_.fresh_rule("json_string_character");
    builder_.define(*string_character_rule_, string_character());
  }
  const ExprId character =
      long_bounded ? builder_.reference(*string_character_rule_) : string_character();
  const RuleId rule = builder_.fresh_rule("json_string");
  builder_.define(rule, quoted(builder_.repeat(character, min_length, max_length)));
  string_rules_.emplace(key, rule);
  return builder_.reference(rule);
}

ExprId JsonSyntax::key_and_colon(std::string_view name) {
  const ExprId key = builder_.literal(json_quoted(name));
  if (!whitespace_) return builder_.sequence({key, builder_.literal(":")});
  return builder_.sequence({key, colon()});
}

void JsonSyntax::define_any_value() {
  any_value_ = builder_.fresh_rule("json_value");
  any_object_ = builder_.fresh_rule("json_object");
  any_array_ = builder_.fresh_rule("json_array");
  const ExprId value = builder_.reference(*any_value_);

  const ExprId member = builder_.sequence({string(0, GrammarBuilder::kUnbounded), colon(), value});
  const ExprId members =
      builder_.sequence({member, builder_.repeat(builder_.sequence({comma(), member}), 0,
                                                 GrammarBuilder::kUnbounded)});
  (void)builder_.define(
      *any_object_, builder_.choice({empty_object(),
                                     builder_.sequence({begin_object(), members, end_object()})}));

  const ExprId items = builder_.sequence(
      {value, builder_.repeat(builder_.sequence({comma(), value}), 0, GrammarBuilder::kUnbounded)});
  (void)builder_.define(
      *any_array_,
      builder_.choice({empty_array(), builder_.sequence({begin_array(), items, end_array()})}));

  (void)builder_.define(
      *any_value_,
      builder_.choice({builder_.reference(*any_object_), builder_.reference(*any_array_),
                       string(0, GrammarBuilder::kUnbounded), add_any_number(builder_),
                       builder_.literal("true"), builder_.literal("false"),
                       builder_.literal("null")}));
}

ExprId JsonSyntax::any_value() {
  if (!any_value_) define_any_value();
  return builder_.reference(*any_value_);
}

ExprId JsonSyntax::any_object() {
  if (!any_value_) define_any_value();
  return builder_.reference(*any_object_);
}

ExprId JsonSyntax::any_array() {
  if (!any_value_) define_any_value();
  return builder_.reference(*any_array_);
}

}  // namespace tern::engine::grammar
