#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/expected.h"
#include "engine/grammar/compile_deadline.h"

namespace tern::engine::grammar {

class Grammar;

using ExprId = std::int32_t;
using RuleId = std::int32_t;

// An inclusive range of Unicode code points.
struct CodepointRange {
  char32_t first = 0;
  char32_t last = 0;
};

// The one form every front end (JSON Schema, regex, choice, GBNF) writes its language in: rules
// whose bodies are expressions over bytes and code points, like GBNF. build() turns them into a
// Grammar the matcher runs. Expressions are values in the builder, named by ExprId; a rule may be
// referred to before it is defined, which is how recursion is written.
class GrammarBuilder {
 public:
  static constexpr std::int32_t kUnbounded = std::numeric_limits<std::int32_t>::max();

  GrammarBuilder();
  // A builder whose build() gives up, with kCompileTimedOut, once `deadline` passes.
  explicit GrammarBuilder(CompileDeadline deadline);
  ~GrammarBuilder();
  GrammarBuilder(GrammarBuilder&&) noexcept;
  GrammarBuilder& operator=(GrammarBuilder&&) noexcept;

  // Matches exactly these bytes (any bytes: UTF-8 text is spelled as its bytes). "" is empty().
  ExprId literal(std::string_view bytes);
  // One code point in (or, negated, not in) the ranges, spelled in UTF-8. The negation is over
  // Unicode scalar values: surrogates never match.
  ExprId char_class(std::vector<CodepointRange> ranges, bool negated = false);
  // One byte in [first, last]: for grammars over raw bytes, not UTF-8 text.
  ExprId byte_range(std::uint8_t first, std::uint8_t last);
  // The empty string.
  ExprId empty();
  ExprId sequence(std::vector<ExprId> parts);
  ExprId choice(std::vector<ExprId> alternatives);
  // `min` to `max` repetitions (max may be kUnbounded).
  ExprId repeat(ExprId item, std::int32_t min, std::int32_t max);
  ExprId optional(ExprId item) { return repeat(item, 0, 1); }
  ExprId reference(RuleId rule);

  // A rule by name: the same name gives the same rule. Defined once, used any number of times.
  RuleId rule(std::string_view name);
  // False when the rule is defined already.
  bool define(RuleId rule, ExprId body);
  bool is_defined(RuleId rule) const;
  std::string_view rule_name(RuleId rule) const;
  // A fresh rule named after `hint` (for helpers a front end makes up).
  RuleId fresh_rule(std::string_view hint);

  // The compile's deadline has passed: front ends ask in their loops and give up with
  // timed_out(), as build() does.
  bool out_of_time() { return deadline_.passed(); }
  static Error timed_out();

  // The grammar whose language is `root`'s. Fails, naming the rule, when a referenced rule is not
  // defined, a rule is left-recursive (it can reach itself without consuming a byte), the
  // grammar is larger than the matcher takes, or the deadline passes.
  Expected<std::shared_ptr<const Grammar>> build(RuleId root);

  struct Node;
  struct RuleData;

 private:
  std::vector<Node> nodes_;
  std::vector<RuleData> rules_;
  std::unordered_map<std::string, RuleId> rule_index_;
  CompileDeadline deadline_;
};

}  // namespace tern::engine::grammar
