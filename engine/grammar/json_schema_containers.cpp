#include "engine/grammar/json_schema_containers.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>

namespace tern::engine::grammar {
namespace {

constexpr std::int32_t kUnbounded = GrammarBuilder::kUnbounded;

// Nothing, or an expression: keeps the grammar free of empty sequences.
using Part = std::optional<ExprId>;

Part concat(GrammarBuilder& builder, std::initializer_list<Part> parts) {
  std::vector<ExprId> present;
  for (const Part& part : parts) {
    if (part) present.push_back(*part);
  }
  if (present.empty()) return std::nullopt;
  return present.size() == 1 ? present.front() : builder.sequence(present);
}

// Written once as a rule, so that each use is a call rather than a copy.
ExprId shared(GrammarBuilder& builder, ExprId expr, std::string_view hint) {
  const RuleId rule = builder.fresh_rule(hint);
  builder.define(rule, expr);
  return builder.reference(rule);
}

// Code points of valid UTF-8 (keys come from a parsed JSON document).
std::vector<char32_t> code_points(std::string_view text) {
  std::vector<char32_t> points;
  for (std::size_t at = 0; at < text.size();) {
    const auto lead = static_cast<unsigned char>(text[at]);
    const int length = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
    char32_t point = length == 1 ? lead : lead & (0xff >> (length + 1));
    for (int i = 1; i < length && at + i < text.size(); ++i) {
      point = (point << 6) | (static_cast<unsigned char>(text[at + i]) & 0x3f);
    }
    points.push_back(point);
    at += length;
  }
  return points;
}

struct TrieNode {
  bool is_name = false;
  std::map<char32_t, std::unique_ptr<TrieNode>> children;
};

const std::vector<CodepointRange> kNotRaw = {{'"', '"'}, {'\\', '\\'}, {0, 0x1f}};

// Raw key text after this node's prefix that does not end as a named key.
ExprId key_rest_except(GrammarBuilder& builder, const TrieNode& node, ExprId any_raw_text) {
  std::vector<ExprId> alternatives;
  if (!node.is_name) alternatives.push_back(builder.empty());
  std::vector<CodepointRange> excluded = kNotRaw;
  for (const auto& [point, child] : node.children) {
    excluded.push_back({point, point});
    // A name with a quote, backslash or control character needs an escape, never written here.
    if (point == '"' || point == '\\' || point < 0x20) continue;
    alternatives.push_back(builder.sequence(
        {builder.char_class({{point, point}}), key_rest_except(builder, *child, any_raw_text)}));
  }
  alternatives.push_back(builder.sequence({builder.char_class(excluded, true), any_raw_text}));
  return alternatives.size() == 1 ? alternatives.front() : builder.choice(alternatives);
}

}  // namespace

ExprId add_object_layout(JsonSyntax& syntax, const std::vector<MemberSlot>& named,
                         std::optional<ExprId> extra_member) {
  GrammarBuilder& builder = syntax.builder();
  const std::size_t count = named.size();
  // opens[i]: members from i on may be the first written (all before i are optional).
  std::vector<bool> opens(count + 1, false);
  opens[0] = true;
  for (std::size_t i = 0; i < count; ++i) opens[i + 1] = opens[i] && !named[i].required;

  // From the end: `after` is what may follow once some member is written (each member then
  // comes after a comma), `first` what may come when none is written yet and must write one.
  Part after;
  Part first;
  if (extra_member) {
    const ExprId extra =
        opens[count] && count > 0 ? shared(builder, *extra_member, "extra_member") : *extra_member;
    after = builder.repeat(builder.sequence({syntax.comma(), extra}), 0, kUnbounded);
    if (opens[count]) first = builder.sequence({extra, *after});
  }
  for (std::size_t i = count; i-- > 0;) {
    // Both continuations use `after` and the member: past a few optional members a copy each
    // would double the grammar per member, so they become rules.
    const bool used_twice = opens[i] && i > 0;
    if (used_twice && after) after = shared(builder, *after, "members_after");
    const ExprId member = used_twice ? shared(builder, named[i].member, "member") : named[i].member;
    if (opens[i]) {
      const ExprId with_this_first = *concat(builder, {member, after});
      first =
          named[i].required || !first ? with_this_first : builder.choice({with_this_first, *first});
    }
    if (i > 0) {
      const ExprId comma_member = builder.sequence({syntax.comma(), member});
      after = concat(builder,
                     {named[i].required ? comma_member : builder.optional(comma_member), after});
    }
  }
  std::vector<ExprId> alternatives;
  if (opens[count]) alternatives.push_back(syntax.empty_object());
  if (first) {
    alternatives.push_back(builder.sequence({syntax.begin_object(), *first, syntax.end_object()}));
  }
  return alternatives.size() == 1 ? alternatives.front() : builder.choice(alternatives);
}

ExprId add_key_except(JsonSyntax& syntax, const std::vector<std::string>& names) {
  GrammarBuilder& builder = syntax.builder();
  TrieNode root;
  for (const std::string& name : names) {
    TrieNode* node = &root;
    for (const char32_t point : code_points(name)) {
      auto& child = node->children[point];
      if (!child) child = std::make_unique<TrieNode>();
      node = child.get();
    }
    node->is_name = true;
  }
  const ExprId any_raw_text = builder.repeat(builder.char_class(kNotRaw, true), 0, kUnbounded);
  return syntax.quoted(key_rest_except(builder, root, any_raw_text));
}

ExprId add_array_layout(JsonSyntax& syntax, const ArrayLayout& layout) {
  GrammarBuilder& builder = syntax.builder();
  const auto prefix_count = static_cast<std::int32_t>(layout.prefix.size());
  const std::int32_t min_items = layout.min_items;
  const std::int32_t max_items =
      layout.rest ? layout.max_items : std::min(layout.max_items, prefix_count);
  // The later items' value is written once per possible item (a bounded repeat is unrolled).
  std::optional<ExprId> rest = layout.rest;
  if (rest) {
    const std::int32_t written = std::max(prefix_count, 1);
    const std::int32_t repeated = max_items == kUnbounded ? std::max(0, min_items - written) + 1
                                                          : std::max(0, max_items - written);
    if ((prefix_count == 0 ? 1 : 0) + repeated > 1) rest = shared(builder, *rest, "item");
  }
  const auto later_items = [&](std::int32_t written) -> ExprId {
    const std::int32_t max_more = max_items == kUnbounded ? kUnbounded : max_items - written;
    return builder.repeat(builder.sequence({syntax.comma(), *rest}),
                          std::max(0, min_items - written), max_more);
  };
  Part items;
  if (max_items > 0) {
    if (prefix_count == 0) {
      items = builder.sequence({*rest, later_items(1)});
    } else {
      // `after` is what follows once `written` prefix items are written.
      const std::int32_t last_prefix = std::min(prefix_count, max_items);
      Part after;
      if (last_prefix == prefix_count && layout.rest && max_items > prefix_count) {
        after = later_items(prefix_count);
      }
      for (std::int32_t written = last_prefix - 1; written >= 1; --written) {
        const ExprId next = *concat(builder, {syntax.comma(), layout.prefix[written], after});
        after = written + 1 <= min_items ? next : builder.optional(next);
      }
      items = concat(builder, {layout.prefix[0], after});
    }
  }
  std::vector<ExprId> alternatives;
  if (min_items == 0) alternatives.push_back(syntax.empty_array());
  if (items) {
    alternatives.push_back(builder.sequence({syntax.begin_array(), *items, syntax.end_array()}));
  }
  return alternatives.size() == 1 ? alternatives.front() : builder.choice(alternatives);
}

}  // namespace tern::engine::grammar
