#pragma once

// The layouts of JSON Schema objects and arrays: which members and items may appear where, with
// the commas right for every choice of optional members, in grammars linear in the schema's size.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/json_schema_syntax.h"

namespace tern::engine::grammar {

// A named object member: key, colon and value, already spelled.
struct MemberSlot {
  ExprId member;
  bool required = false;
};

// '{', the named members in their order (required ones always, optional ones or not), then, when
// `extra_member` is given, any number of extra members, and '}'.
ExprId add_object_layout(JsonSyntax& syntax, const std::vector<MemberSlot>& named,
                         std::optional<ExprId> extra_member);

// A quoted key equal to none of `names`. Such keys are written without escapes, so that no
// spelling of a named key (say "\u0061" for "a") slips through and repeats a named member.
ExprId add_key_except(JsonSyntax& syntax, const std::vector<std::string>& names);

struct ArrayLayout {
  std::vector<ExprId> prefix;  // the first items' values, in order (prefixItems)
  std::optional<ExprId> rest;  // the later items' value, or none when no more may follow
  std::int32_t min_items = 0;
  std::int32_t max_items = GrammarBuilder::kUnbounded;  // at most prefix.size() without `rest`
};

// '[', items as the layout says, ']'. The layout must allow some length (min_items <= max_items).
ExprId add_array_layout(JsonSyntax& syntax, const ArrayLayout& layout);

}  // namespace tern::engine::grammar
