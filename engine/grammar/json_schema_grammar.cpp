#include "engine/grammar/json_schema_grammar.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/grammar/json_schema_containers.h"
#include "engine/grammar/json_schema_decimal.h"
#include "engine/grammar/json_schema_formats.h"
#include "engine/grammar/json_schema_numbers.h"
#include "engine/grammar/json_schema_syntax.h"
#include "engine/grammar/json_schema_values.h"
#include "engine/grammar/regex_grammar.h"
#include "engine/json_parse_count.h"

namespace tern::engine::grammar {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
constexpr std::int32_t kUnbounded = GrammarBuilder::kUnbounded;

// Keywords not listed here or below (annotations such as title and description, $defs, and
// keywords unknown to JSON Schema) are ignored.
// JSON Schema keywords that constrain values and are not supported.
constexpr std::array<std::string_view, 21> kUnsupportedKeywords = {"not",
                                                                   "if",
                                                                   "then",
                                                                   "else",
                                                                   "patternProperties",
                                                                   "uniqueItems",
                                                                   "multipleOf",
                                                                   "contains",
                                                                   "minContains",
                                                                   "maxContains",
                                                                   "dependentRequired",
                                                                   "dependentSchemas",
                                                                   "dependencies",
                                                                   "minProperties",
                                                                   "maxProperties",
                                                                   "propertyNames",
                                                                   "unevaluatedProperties",
                                                                   "unevaluatedItems",
                                                                   "additionalItems",
                                                                   "$dynamicRef",
                                                                   "$recursiveRef"};
constexpr std::array<std::string_view, 4> kCompositionKeywords = {"$ref", "allOf", "anyOf",
                                                                  "oneOf"};
// The supported keywords of each type (keywords of other types do not apply to its values).
constexpr std::array<std::string_view, 3> kValueKeywords = {"type", "enum", "const"};
constexpr std::array<std::string_view, 4> kStringKeywords = {"pattern", "minLength", "maxLength",
                                                             "format"};
constexpr std::array<std::string_view, 4> kNumberKeywords = {
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
constexpr std::array<std::string_view, 3> kObjectKeywords = {"properties", "required",
                                                             "additionalProperties"};
constexpr std::array<std::string_view, 4> kArrayKeywords = {"items", "prefixItems", "minItems",
                                                            "maxItems"};

template <std::size_t N>
bool among(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_supported(std::string_view keyword) {
  return among(kCompositionKeywords, keyword) || among(kValueKeywords, keyword) ||
         among(kStringKeywords, keyword) || among(kNumberKeywords, keyword) ||
         among(kObjectKeywords, keyword) || among(kArrayKeywords, keyword);
}

std::string child_pointer(const std::string& pointer, std::string_view token) {
  std::string child = pointer + "/";
  for (const char c : token) {
    if (c == '~') {
      child += "~0";
    } else if (c == '/') {
      child += "~1";
    } else {
      child += c;
    }
  }
  return child;
}

std::string at(const std::string& pointer) {
  return pointer.empty() ? "at the schema root" : "at " + pointer;
}

Error schema_error(std::string message) {
  return Error{std::move(message), ErrorKind::invalid_field};
}

Error unsupported_keyword(std::string_view keyword, const std::string& pointer) {
  return schema_error("unsupported JSON Schema keyword \"" + std::string(keyword) + "\" " +
                      at(pointer));
}

Error invalid_keyword(std::string_view keyword, const std::string& pointer, std::string_view what) {
  return schema_error("invalid JSON Schema keyword \"" + std::string(keyword) + "\" " +
                      at(pointer) + ": " + std::string(what));
}

Error unsatisfiable(const std::string& pointer, std::string_view why) {
  return schema_error("unsatisfiable JSON Schema " + at(pointer) + ": " + std::string(why));
}

// The schema object at hand: its keywords, looked up by name.
class SchemaObject {
 public:
  SchemaObject(simdjson::dom::object object, std::string pointer)
      : object_(object), pointer_(std::move(pointer)) {}

  std::optional<element> get(std::string_view keyword) const {
    element value;
    if (object_.at_key(keyword).get(value) != simdjson::SUCCESS) return std::nullopt;
    return value;
  }
  bool has(std::string_view keyword) const { return get(keyword).has_value(); }
  template <std::size_t N>
  bool has_any(const std::array<std::string_view, N>& keywords) const {
    return std::any_of(keywords.begin(), keywords.end(),
                       [&](std::string_view keyword) { return has(keyword); });
  }
  simdjson::dom::object object() const { return object_; }
  const std::string& pointer() const { return pointer_; }
  std::string child(std::string_view keyword) const { return child_pointer(pointer_, keyword); }

  // A nonnegative integer count (minLength, maxItems, ...), nullopt when absent. Counts past
  // what a grammar can unroll read as kUnbounded.
  Expected<std::optional<std::int32_t>> count(std::string_view keyword) const {
    auto value = get(keyword);
    if (!value) return std::optional<std::int32_t>();
    const std::optional<std::string> spelled = number_spelling(*value);
    const std::optional<Decimal> number = spelled ? parse_decimal(*spelled) : std::nullopt;
    if (!number || number->negative || !number->is_integer()) {
      return invalid_keyword(keyword, pointer_, "must be a nonnegative integer");
    }
    if (compare_naturals(number->integer_digits, std::to_string(kUnbounded)) >= 0) {
      return std::optional<std::int32_t>(kUnbounded);
    }
    return std::optional<std::int32_t>(std::stoi(number->integer_digits));
  }

 private:
  simdjson::dom::object object_;
  std::string pointer_;
};

class SchemaCompiler {
 public:
  SchemaCompiler(GrammarBuilder& builder, const JsonSchemaOptions& options, element root)
      : builder_(builder),
        syntax_(builder, options.allow_whitespace),
        strict_(options.strict),
        root_(root) {}

  Expected<ExprId> compile(element schema, const std::string& pointer) {
    // The compiler recurses once per level: a hostile schema must not exhaust the stack.
    if (depth_ >= kMaxDepth) {
      return schema_error("JSON Schema " + at(pointer) + " is nested more than " +
                          std::to_string(kMaxDepth) + " levels deep");
    }
    if (builder_.out_of_time()) return GrammarBuilder::timed_out();
    ++depth_;
    Expected<ExprId> compiled = compile_schema(schema, pointer);
    --depth_;
    return compiled;
  }

 private:
  static constexpr int kMaxDepth = 128;

  Expected<ExprId> compile_schema(element schema, const std::string& pointer) {
    bool accepts_all = false;
    if (schema.get_bool().get(accepts_all) == simdjson::SUCCESS) {
      if (!accepts_all) return unsatisfiable(pointer, "the schema false accepts no value");
      return syntax_.any_value();
    }
    simdjson::dom::object object;
    if (schema.get_object().get(object) != simdjson::SUCCESS) {
      return schema_error("invalid JSON Schema " + at(pointer) +
                          ": a schema must be an object or a boolean");
    }
    const SchemaObject keywords(object, pointer);
    if (Status status = check_keywords(keywords); !status) return status.error();
    if (keywords.has_any(kCompositionKeywords)) return compile_composition(keywords);
    if (keywords.has("enum") || keywords.has("const")) return compile_values(keywords);
    return compile_types(keywords);
  }

  // Refuses unsupported keywords (or, not strict, lets them be).
  Status check_keywords(const SchemaObject& keywords) const {
    for (const auto field : keywords.object()) {
      if (!strict_ || !among(kUnsupportedKeywords, field.key)) continue;
      // uniqueItems false asks nothing.
      bool unique = true;
      if (field.key == "uniqueItems" && field.value.get_bool().get(unique) == simdjson::SUCCESS &&
          !unique) {
        continue;
      }
      return unsupported_keyword(field.key, keywords.pointer());
    }
    return Status::success();
  }

  // A keyword next to `keyword` that constrains values too, if any.
  std::optional<std::string_view> constraining_sibling(const SchemaObject& keywords,
                                                       std::string_view keyword) const {
    for (const auto field : keywords.object()) {
      if (field.key != keyword && is_supported(field.key)) return field.key;
    }
    return std::nullopt;
  }

  Expected<ExprId> compile_composition(const SchemaObject& keywords) {
    std::string_view keyword;
    for (const std::string_view candidate : kCompositionKeywords) {
      if (keywords.has(candidate)) {
        keyword = candidate;
        break;
      }
    }
    if (auto sibling = constraining_sibling(keywords, keyword); sibling && strict_) {
      return schema_error("unsupported JSON Schema keyword \"" + std::string(*sibling) +
                          "\" next to \"" + std::string(keyword) + "\" " + at(keywords.pointer()) +
                          ": " + std::string(keyword) + " must stand alone");
    }
    const element value = *keywords.get(keyword);
    if (keyword == "$ref") {
      std::string_view reference;
      if (value.get_string().get(reference) != simdjson::SUCCESS) {
        return invalid_keyword(keyword, keywords.pointer(), "must be a string");
      }
      return compile_reference(reference, keywords.pointer());
    }
    simdjson::dom::array subschemas;
    if (value.get_array().get(subschemas) != simdjson::SUCCESS || subschemas.size() == 0) {
      return invalid_keyword(keyword, keywords.pointer(), "must be a nonempty array of schemas");
    }
    const std::string pointer = keywords.child(keyword);
    if (keyword == "allOf") {
      if (subschemas.size() != 1) {
        return schema_error("unsupported JSON Schema keyword \"allOf\" " + at(keywords.pointer()) +
                            ": only one subschema is supported, not " +
                            std::to_string(subschemas.size()));
      }
    }
    // One subschema of allOf is the schema. oneOf is read as anyOf: a value matching two
    // alternatives is not excluded.
    std::vector<ExprId> alternatives;
    std::size_t index = 0;
    for (const element subschema : subschemas) {
      auto alternative = compile(subschema, pointer + "/" + std::to_string(index++));
      if (!alternative) return alternative.error();
      alternatives.push_back(*alternative);
    }
    return builder_.choice(std::move(alternatives));
  }

  // "#" and "#/json/pointer" into this document; each target becomes one rule, so recursive
  // definitions refer to themselves.
  Expected<ExprId> compile_reference(std::string_view reference, const std::string& pointer) {
    const auto fail = [&] {
      return schema_error("JSON Schema $ref \"" + std::string(reference) + "\" " + at(pointer) +
                          " does not resolve (only \"#\" and \"#/...\" pointers into the schema "
                          "do)");
    };
    std::optional<std::string> target_pointer = reference_pointer(reference);
    if (!target_pointer) return fail();
    std::optional<element> target = resolve_pointer(root_, *target_pointer);
    if (!target) return fail();
    if (auto found = reference_rules_.find(*target_pointer); found != reference_rules_.end()) {
      return builder_.reference(found->second);
    }
    const RuleId rule = builder_.fresh_rule("#" + *target_pointer);
    reference_rules_.emplace(*target_pointer, rule);
    auto body = compile(*target, *target_pointer);
    if (!body) return body.error();
    builder_.define(rule, *body);
    return builder_.reference(rule);
  }

  Expected<ExprId> compile_values(const SchemaObject& keywords) {
    std::vector<element> values;
    if (auto listed = keywords.get("enum")) {
      simdjson::dom::array array;
      if (listed->get_array().get(array) != simdjson::SUCCESS) {
        return invalid_keyword("enum", keywords.pointer(), "must be an array");
      }
      for (const element value : array) values.push_back(value);
    }
    if (auto constant = keywords.get("const")) {
      const std::string spelled = compact_json(*constant);
      const bool listed = !keywords.has("enum") ||
                          std::any_of(values.begin(), values.end(), [&](const element& value) {
                            return compact_json(value) == spelled;
                          });
      values.clear();
      if (listed) values.push_back(*constant);
    }
    if (strict_) {
      for (const auto field : keywords.object()) {
        if (is_supported(field.key) && !among(kValueKeywords, field.key)) {
          return schema_error("unsupported JSON Schema keyword \"" + std::string(field.key) +
                              "\" next to \"enum\" or \"const\" " + at(keywords.pointer()));
        }
      }
    }
    std::optional<JsonTypes> types;
    if (keywords.has("type")) {
      auto listed = read_types(keywords);
      if (!listed) return listed.error();
      types = *listed;
    }
    std::set<std::string> spellings;
    std::vector<ExprId> alternatives;
    for (const element& value : values) {
      if (builder_.out_of_time()) return GrammarBuilder::timed_out();
      if (types && !types->admits(value)) continue;
      std::string spelled = compact_json(value);
      if (spellings.insert(spelled).second) alternatives.push_back(builder_.literal(spelled));
    }
    if (alternatives.empty()) {
      return unsatisfiable(keywords.pointer(), "no value of \"enum\" or \"const\" is allowed");
    }
    return builder_.choice(std::move(alternatives));
  }

  Expected<JsonTypes> read_types(const SchemaObject& keywords) const {
    const element value = *keywords.get("type");
    std::vector<std::string_view> names;
    std::string_view name;
    simdjson::dom::array array;
    if (value.get_string().get(name) == simdjson::SUCCESS) {
      names.push_back(name);
    } else if (value.get_array().get(array) == simdjson::SUCCESS) {
      for (const element item : array) {
        if (item.get_string().get(name) != simdjson::SUCCESS) {
          return invalid_keyword("type", keywords.pointer(), "must hold type names");
        }
        names.push_back(name);
      }
    } else {
      return invalid_keyword("type", keywords.pointer(), "must be a type name or an array of them");
    }
    JsonTypes types;
    for (const std::string_view type : names) {
      if (!types.add(type)) {
        return invalid_keyword("type", keywords.pointer(),
                               "unknown type \"" + std::string(type) + "\"");
      }
    }
    if (types.none()) return unsatisfiable(keywords.pointer(), "\"type\" allows no type");
    return types;
  }

  // Types named by `type`, or else those the keywords present speak of, or else any value.
  Expected<ExprId> compile_types(const SchemaObject& keywords) {
    JsonTypes types;
    if (keywords.has("type")) {
      auto listed = read_types(keywords);
      if (!listed) return listed.error();
      types = *listed;
    } else {
      if (keywords.has_any(kStringKeywords)) types.string = true;
      if (keywords.has_any(kNumberKeywords)) types.number = true;
      if (keywords.has_any(kObjectKeywords)) types.object = true;
      if (keywords.has_any(kArrayKeywords)) types.array = true;
      // No keyword constrains values: any JSON value, objects with any members included.
      if (types.none()) return syntax_.any_value();
    }
    std::vector<ExprId> alternatives;
    if (types.null) alternatives.push_back(builder_.literal("null"));
    if (types.boolean) {
      alternatives.push_back(
          builder_.choice({builder_.literal("true"), builder_.literal("false")}));
    }
    const auto add = [&](Expected<ExprId> alternative) -> Status {
      if (!alternative) return alternative.error();
      alternatives.push_back(*alternative);
      return Status::success();
    };
    if (types.string) {
      if (Status status = add(compile_string(keywords)); !status) return status.error();
    }
    if (types.number || types.integer) {
      if (Status status = add(compile_number(keywords, !types.number)); !status) {
        return status.error();
      }
    }
    if (types.object) {
      if (Status status = add(compile_object(keywords)); !status) return status.error();
    }
    if (types.array) {
      if (Status status = add(compile_array(keywords)); !status) return status.error();
    }
    return builder_.choice(std::move(alternatives));
  }

  Expected<ExprId> compile_string(const SchemaObject& keywords) {
    auto min_length = keywords.count("minLength");
    if (!min_length) return min_length.error();
    auto max_length = keywords.count("maxLength");
    if (!max_length) return max_length.error();
    const std::int32_t min = min_length->value_or(0);
    const std::int32_t max = max_length->value_or(kUnbounded);
    if (min > max) return unsatisfiable(keywords.pointer(), "minLength is above maxLength");
    if (min == kUnbounded) return unsatisfiable(keywords.pointer(), "minLength is too large");

    std::string_view format;
    if (auto value = keywords.get("format")) {
      if (value->get_string().get(format) != simdjson::SUCCESS) {
        return invalid_keyword("format", keywords.pointer(), "must be a string");
      }
      if (format_kind(format) != FormatKind::string) format = {};
    }
    if (auto value = keywords.get("pattern")) {
      std::string_view pattern;
      if (value->get_string().get(pattern) != simdjson::SUCCESS) {
        return invalid_keyword("pattern", keywords.pointer(), "must be a string");
      }
      const bool lengths = min > 0 || max != kUnbounded;
      if (strict_ && (lengths || !format.empty())) {
        return schema_error(std::string("unsupported JSON Schema keyword ") +
                            (lengths ? "\"minLength\"/\"maxLength\"" : "\"format\"") +
                            " next to \"pattern\" " + at(keywords.pointer()));
      }
      RegexOptions options;
      options.json_string_escaped = true;
      auto content = add_regex(builder_, pattern, options);
      if (!content) {
        return invalid_keyword("pattern", keywords.pointer(), content.error().message);
      }
      return syntax_.quoted(*content);
    }
    if (!format.empty()) {
      auto content = add_string_format(syntax_, format, min, max);
      if (content) return syntax_.quoted(*content);
      if (strict_) {
        return schema_error(
            "unsupported JSON Schema keyword \"minLength\"/\"maxLength\" next to "
            "\"format\" " +
            at(keywords.pointer()) + ": no \"" + std::string(format) +
            "\" string written here has such a length");
      }
    }
    return syntax_.string(min, max);
  }

  Expected<std::optional<NumberBound>> bound(const SchemaObject& keywords, std::string_view keyword,
                                             bool exclusive) const {
    auto value = keywords.get(keyword);
    if (!value) return std::optional<NumberBound>();
    const std::optional<std::string> spelled = number_spelling(*value);
    std::optional<Decimal> number = spelled ? parse_decimal(*spelled) : std::nullopt;
    if (!number) return invalid_keyword(keyword, keywords.pointer(), "must be a number");
    return std::optional<NumberBound>(NumberBound{std::move(*number), exclusive});
  }

  Expected<ExprId> compile_number(const SchemaObject& keywords, bool integers_only) {
    std::optional<NumberBound> lower;
    std::optional<NumberBound> upper;
    // The tighter of two bounds on one side; at a tie the exclusive one.
    const auto tighten = [](std::optional<NumberBound>& kept, std::optional<NumberBound> other,
                            int tighter_sign) {
      if (!other) return;
      if (!kept) {
        kept = std::move(other);
        return;
      }
      const int order = compare_decimals(other->value, kept->value);
      if (order * tighter_sign > 0 || (order == 0 && other->exclusive)) kept = std::move(other);
    };
    for (const auto& [keyword, exclusive, is_lower] :
         {std::tuple{"minimum", false, true}, std::tuple{"exclusiveMinimum", true, true},
          std::tuple{"maximum", false, false}, std::tuple{"exclusiveMaximum", true, false}}) {
      auto read = bound(keywords, keyword, exclusive);
      if (!read) return read.error();
      tighten(is_lower ? lower : upper, std::move(*read), is_lower ? 1 : -1);
    }
    std::string_view format;
    if (auto value = keywords.get("format");
        value && value->get_string().get(format) == simdjson::SUCCESS) {
      // ajv-formats' number formats: int32 and int64 ask for an integer (int32's in range).
      if (format == "int32") {
        tighten(lower, NumberBound{*parse_decimal("-2147483648"), false}, 1);
        tighten(upper, NumberBound{*parse_decimal("2147483647"), false}, -1);
      }
      if (format == "int32" || format == "int64") integers_only = true;
    }
    if (!lower && !upper) {
      return integers_only ? add_any_integer(builder_) : add_any_number(builder_);
    }
    auto range = add_number_range(builder_, lower, upper, integers_only);
    if (!range) {
      return unsatisfiable(keywords.pointer(), integers_only ? "no integer lies within the bounds"
                                                             : "no number lies within the bounds");
    }
    return *range;
  }

  Expected<ExprId> compile_object(const SchemaObject& keywords) {
    struct Named {
      std::string name;
      std::optional<ExprId> value;  // none: the property may not appear (its schema is false)
      bool required = false;
    };
    std::vector<Named> named;
    if (auto value = keywords.get("properties")) {
      simdjson::dom::object properties;
      if (value->get_object().get(properties) != simdjson::SUCCESS) {
        return invalid_keyword("properties", keywords.pointer(), "must be an object");
      }
      const std::string pointer = keywords.child("properties");
      for (const auto field : properties) {
        Named property{std::string(field.key), std::nullopt, false};
        bool accepts_all = true;
        if (field.value.get_bool().get(accepts_all) != simdjson::SUCCESS || accepts_all) {
          auto compiled = compile(field.value, child_pointer(pointer, field.key));
          if (!compiled) return compiled.error();
          property.value = *compiled;
        }
        named.push_back(std::move(property));
      }
    }
    std::optional<ExprId> extra_value;
    bool extra_forbidden = false;  // additionalProperties is false, not merely absent
    if (auto value = keywords.get("additionalProperties")) {
      bool allowed = false;
      if (value->get_bool().get(allowed) == simdjson::SUCCESS && !allowed) {
        extra_forbidden = true;
      } else {
        auto compiled = compile(*value, keywords.child("additionalProperties"));
        if (!compiled) return compiled.error();
        extra_value = *compiled;
      }
    }
    if (auto value = keywords.get("required")) {
      simdjson::dom::array required;
      if (value->get_array().get(required) != simdjson::SUCCESS) {
        return invalid_keyword("required", keywords.pointer(), "must be an array of names");
      }
      for (const element item : required) {
        std::string_view name;
        if (item.get_string().get(name) != simdjson::SUCCESS) {
          return invalid_keyword("required", keywords.pointer(), "must be an array of names");
        }
        auto found = std::find_if(named.begin(), named.end(),
                                  [&](const Named& property) { return property.name == name; });
        if (found == named.end()) {
          // Not in properties: an extra member that must appear. With additionalProperties
          // absent, which allows any member to a validator, its value may be anything.
          if (extra_forbidden) {
            return unsatisfiable(keywords.pointer(),
                                 "required property \"" + std::string(name) +
                                     "\" is not in properties and additionalProperties is false");
          }
          named.push_back(
              {std::string(name), extra_value ? *extra_value : syntax_.any_value(), true});
          continue;
        }
        if (!found->value) {
          return unsatisfiable(child_pointer(keywords.child("properties"), name),
                               "required property \"" + std::string(name) + "\" has schema false");
        }
        found->required = true;
      }
    }
    std::vector<MemberSlot> slots;
    std::vector<std::string> names;
    for (const Named& property : named) {
      names.push_back(property.name);
      if (!property.value) continue;
      slots.push_back({builder_.sequence({syntax_.key_and_colon(property.name), *property.value}),
                       property.required});
    }
    std::optional<ExprId> extra_member;
    if (extra_value) {
      extra_member =
          builder_.sequence({add_key_except(syntax_, names), syntax_.colon(), *extra_value});
    }
    return add_object_layout(syntax_, slots, extra_member);
  }

  Expected<ExprId> compile_array(const SchemaObject& keywords) {
    ArrayLayout layout;
    bool prefix_closed = false;  // a prefixItems schema is false: no item may stand there
    if (auto value = keywords.get("prefixItems")) {
      simdjson::dom::array prefix;
      if (value->get_array().get(prefix) != simdjson::SUCCESS) {
        return invalid_keyword("prefixItems", keywords.pointer(), "must be an array of schemas");
      }
      const std::string pointer = keywords.child("prefixItems");
      std::size_t index = 0;
      for (const element item : prefix) {
        bool accepts_all = true;
        if (item.get_bool().get(accepts_all) == simdjson::SUCCESS && !accepts_all) {
          prefix_closed = true;
          break;
        }
        auto compiled = compile(item, pointer + "/" + std::to_string(index++));
        if (!compiled) return compiled.error();
        layout.prefix.push_back(*compiled);
      }
    }
    if (auto value = keywords.get("items"); !prefix_closed) {
      bool accepts_all = true;
      if (!value) {
        layout.rest = syntax_.any_value();
      } else if (value->type() == element_type::ARRAY) {
        return invalid_keyword("items", keywords.pointer(),
                               "must be a schema (for tuples, use prefixItems)");
      } else if (value->get_bool().get(accepts_all) != simdjson::SUCCESS || accepts_all) {
        auto compiled = compile(*value, keywords.child("items"));
        if (!compiled) return compiled.error();
        layout.rest = *compiled;
      }
    }
    auto min_items = keywords.count("minItems");
    if (!min_items) return min_items.error();
    auto max_items = keywords.count("maxItems");
    if (!max_items) return max_items.error();
    layout.min_items = min_items->value_or(0);
    layout.max_items = max_items->value_or(kUnbounded);
    if (!layout.rest) {
      layout.max_items =
          std::min(layout.max_items, static_cast<std::int32_t>(layout.prefix.size()));
    }
    if (layout.min_items > layout.max_items) {
      return unsatisfiable(keywords.pointer(),
                           layout.rest ? "minItems is above maxItems"
                                       : "minItems is above the number of items allowed");
    }
    return add_array_layout(syntax_, layout);
  }

  GrammarBuilder& builder_;
  JsonSyntax syntax_;
  bool strict_;
  element root_;
  std::map<std::string, RuleId> reference_rules_;
  int depth_ = 0;
};

}  // namespace

Expected<RuleId> add_json_schema(GrammarBuilder& builder, std::string_view schema_json,
                                 const JsonSchemaOptions& options) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(schema_json);
  simdjson::padded_string rewritten;
  element root;
  count_json_parse();
  auto error = parser.parse(padded).get(root);
  if (error == simdjson::NUMBER_ERROR) {
    rewritten = simdjson::padded_string(with_big_integers_as_floats(schema_json));
    error = parser.parse(rewritten).get(root);
  }
  if (error) {
    return schema_error(std::string("invalid JSON Schema: not JSON (") +
                        simdjson::error_message(error) + ")");
  }
  return add_json_schema(builder, root, options);
}

Expected<RuleId> add_json_schema(GrammarBuilder& builder, element schema,
                                 const JsonSchemaOptions& options) {
  SchemaCompiler compiler(builder, options, schema);
  auto body = compiler.compile(schema, "");
  if (!body) return body.error();
  const RuleId rule = builder.fresh_rule("json_schema");
  builder.define(rule, *body);
  return rule;
}

Expected<std::shared_ptr<const Grammar>> compile_json_schema(std::string_view schema_json,
                                                             const JsonSchemaOptions& options,
                                                             CompileDeadline deadline) {
  GrammarBuilder builder(deadline);
  auto root = add_json_schema(builder, schema_json, options);
  if (!root) return root.error();
  auto grammar = builder.build(*root);
  if (!grammar && grammar.error().message == kCompileTimedOut) return grammar.error();
  if (!grammar) return schema_error("JSON Schema: " + grammar.error().message);
  return grammar;
}

RuleId add_any_json_object(GrammarBuilder& builder, const JsonSchemaOptions& options) {
  JsonSyntax syntax(builder, options.allow_whitespace);
  const RuleId rule = builder.fresh_rule("json_object_root");
  builder.define(rule, syntax.any_object());
  return rule;
}

Expected<std::shared_ptr<const Grammar>> compile_any_json_object(const JsonSchemaOptions& options) {
  GrammarBuilder builder;
  return builder.build(add_any_json_object(builder, options));
}

}  // namespace tern::engine::grammar
