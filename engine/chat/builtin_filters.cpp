// Jinja's filters (`x | name(args)`), with the signatures and defaults Jinja gives them, plus
// transformers' tojson (ensure_ascii=False, keys unsorted).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "engine/chat/builtins.h"
#include "engine/chat/interpreter.h"
#include "engine/chat/template_error.h"
#include "engine/chat/text.h"
#include "engine/chat/value_json.h"

namespace tern::engine::chat {

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw TemplateError(message);
}

std::string str(const Value& v) {
  return to_python_str(v);
}

std::int64_t int_argument(const Value& v, std::int64_t if_absent, std::string_view what) {
  if (v.is_undefined() || v.is_none()) return if_absent;
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool() ? 1 : 0;
  fail(std::string(what) + " must be an integer");
}

// Jinja's attribute paths for map/selectattr/sort: "a.b.0" walks attributes and indexes.
Value attribute_path(Interpreter& in, const Value& item, const Value& path) {
  if (path.is_int()) return in.get_item(item, path);
  std::string spec = str(path);
  Value current = item;
  for (const std::string& part : text::split(spec, std::string_view("."), -1)) {
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(),
                                                [](char c) { return c >= '0' && c <= '9'; });
    current = numeric ? in.get_item(current, Value::integer(std::atoll(part.c_str())))
                      : in.get_item(current, Value::string(part));
  }
  return current;
}

// The key a value sorts and deduplicates by: strings fold case unless asked not to.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(text::to_lower(v.as_string()));
  return v;
}

int ordered(const Value& a, const Value& b) {
  std::optional<int> order = compare_values(a, b);
  if (!order) {
    fail("cannot compare '" + std::string(type_name(a)) + "' with '" + std::string(type_name(b)) +
         "'");
  }
  return *order;
}

Value filter_tojson(Interpreter&, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "tojson", {"indent", "ensure_ascii", "separators", "sort_keys"});
  if (reader.get(1).truthy()) fail("tojson: ensure_ascii=True is not supported");
  if (reader.get(3).truthy()) fail("tojson: sort_keys=True is not supported");
  if (reader.has(2)) fail("tojson: separators are not supported");
  int indent = -1;
  if (reader.has(0) && !reader.get(0).is_none()) {
    indent = static_cast<int>(
        std::clamp<std::int64_t>(int_argument(reader.get(0), -1, "indent"), 0, 64));
  }
  Expected<std::string> json = to_json(v, indent);
  if (!json) fail(json.error().message);
  return Value::string(std::move(json).value());
}

Value filter_trim(Interpreter&, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "trim", {"chars"});
  std::optional<std::string> chars;
  if (reader.has(0) && !reader.get(0).is_none()) chars = str(reader.get(0));
  return Value::string(text::strip(str(v), chars, true, true));
}

Value filter_length(Interpreter&, const Value& v, const CallArgs&) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return Value::integer(0);
    case Value::Kind::kString:
      return Value::integer(static_cast<std::int64_t>(text::code_point_count(v.as_string())));
    case Value::Kind::kList:
      return Value::integer(static_cast<std::int64_t>(v.as_list().size()));
    case Value::Kind::kDict:
      return Value::integer(static_cast<std::int64_t>(v.as_dict().size()));
    default:
      fail("object of type '" + std::string(type_name(v)) + "' has no len()");
  }
}

Value filter_default(Interpreter&, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "default", {"default_value", "boolean"});
  bool use_default = v.is_undefined() || (reader.get(1).truthy() && !v.truthy());
  if (!use_default) return v;
  return reader.has(0) ? reader.get(0) : Value::string("");
}

Value filter_join(Interpreter& in, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "join", {"d", "attribute"});
  std::string separator = reader.has(0) ? str(reader.get(0)) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += separator;
    first = false;
    out += str(reader.has(1) ? attribute_path(in, item, reader.get(1)) : item);
    in.check_size(out.size(), "joined string");
  }
  return Value::string(std::move(out));
}

Value filter_upper(Interpreter&, const Value& v, const CallArgs&) {
  return Value::string(text::to_upper(str(v)));
}
Value filter_lower(Interpreter&, const Value& v, const CallArgs&) {
  return Value::string(text::to_lower(str(v)));
}
Value filter_capitalize(Interpreter&, const Value& v, const CallArgs&) {
  return Value::string(text::capitalize(str(v)));
}
Value filter_title(Interpreter&, const Value& v, const CallArgs&) {
  return Value::string(text::title(str(v)));
}

Value filter_replace(Interpreter& in, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "replace", {"old", "new", "count"});
  std::string s = str(v);
  std::string old_text = str(reader.get(0));
  std::string new_text = str(reader.get(1));
  long long count = int_argument(reader.get(2), -1, "count");
  std::size_t occurrences = text::count_occurrences(s, old_text);
  if (new_text.size() > old_text.size()) {
    in.check_size(s.size() + occurrences * (new_text.size() - old_text.size()), "string");
  }
  return Value::string(text::replace(s, old_text, new_text, count));
}

Value filter_items(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) fail("filter 'items' needs a mapping, got '" + std::string(type_name(v)) + "'");
  ValueList pairs;
  for (const auto& [key, item] : v.as_dict()) {
    pairs.push_back(Value::list({Value::string(key), item}));
  }
  return Value::list(std::move(pairs));
}

Value filter_list(Interpreter&, const Value& v, const CallArgs&) {
  return Value::list(iterate(v));
}

Value filter_first(Interpreter&, const Value& v, const CallArgs&) {
  ValueList items = iterate(v);
  return items.empty() ? Value() : items.front();
}

Value filter_last(Interpreter&, const Value& v, const CallArgs&) {
  ValueList items = iterate(v);
  return items.empty() ? Value() : items.back();
}

Value filter_string(Interpreter&, const Value& v, const CallArgs&) {
  return Value::string(str(v));
}

std::optional<double> parse_float(const std::string& s) {
  std::string trimmed = text::strip(s, std::nullopt, true, true);
  if (trimmed.empty()) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(trimmed.c_str(), &end);
  if (end != trimmed.c_str() + trimmed.size()) return std::nullopt;
  return d;
}

Value filter_int(Interpreter&, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "int", {"default", "base"});
  Value fallback = reader.has(0) ? reader.get(0) : Value::integer(0);
  if (v.is_int()) return v;
  if (v.is_bool()) return Value::integer(v.as_bool() ? 1 : 0);
  if (v.is_float()) {
    double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(static_cast<std::int64_t>(d));
  }
  if (v.is_string()) {
    int base = static_cast<int>(int_argument(reader.get(1), 10, "base"));
    std::string s = text::strip(v.as_string(), std::nullopt, true, true);
    std::string digits;
    for (char c : s) {
      if (c != '_') digits += c;
    }
    if (base >= 2 && base <= 36 && !digits.empty()) {
      char* end = nullptr;
      errno = 0;
      long long parsed = std::strtoll(digits.c_str(), &end, base);
      if (errno == 0 && end == digits.c_str() + digits.size()) return Value::integer(parsed);
    }
    if (std::optional<double> d = parse_float(s);
        d && std::isfinite(*d) && std::fabs(*d) < 9.2e18) {
      return Value::integer(static_cast<std::int64_t>(*d));
    }
  }
  return fallback;
}

Value filter_float(Interpreter&, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "float", {"default"});
  Value fallback = reader.has(0) ? reader.get(0) : Value::floating(0.0);
  if (v.is_number()) return Value::floating(v.to_double());
  if (v.is_string()) {
    if (std::optional<double> d = parse_float(v.as_string())) return Value::floating(*d);
  }
  return fallback;
}

Value filter_indent(Interpreter& in, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "indent", {"width", "first", "blank"});
  std::string indentation;
  if (reader.get(0).is_string()) {
    indentation = reader.get(0).as_string();
  } else {
    std::int64_t width = int_argument(reader.get(0), 4, "width");
    in.check_size(static_cast<std::size_t>(std::max<std::int64_t>(width, 0)), "indent");
    indentation.assign(static_cast<std::size_t>(std::max<std::int64_t>(width, 0)), ' ');
  }
  bool first = reader.get(1).truthy();
  bool blank = reader.get(2).truthy();
  // Jinja appends a newline before splitting, which keeps a trailing newline in the result.
  std::vector<std::string> lines = text::split_lines(str(v) + "\n");
  in.check_size((str(v).size() + 1) * (indentation.size() + 1), "indented string");
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += '\n';
      if (blank || !lines[i].empty()) out += indentation;
    }
    out += lines[i];
  }
  if (first) out = indentation + out;
  return Value::string(std::move(out));
}

Value filter_map(Interpreter& in, const Value& v, const CallArgs& args) {
  ValueList out;
  if (const Value* attribute = args.find_keyword("attribute")) {
    const Value* fallback = args.find_keyword("default");
    for (const Value& item : iterate(v)) {
      Value mapped = attribute_path(in, item, *attribute);
      if (mapped.is_undefined() && fallback != nullptr) mapped = *fallback;
      out.push_back(std::move(mapped));
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    fail("map needs a filter name or attribute=");
  }
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : iterate(v)) {
    out.push_back(in.apply_filter(args.positional[0].as_string(), item, rest));
  }
  return Value::list(std::move(out));
}

// select/reject/selectattr/rejectattr share this: an optional attribute, a test name and its
// arguments; without a test, truthiness decides.
Value select_items(Interpreter& in, const Value& v, const CallArgs& args, bool by_attribute,
                   bool keep_when) {
  std::size_t next = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) fail("selectattr/rejectattr need an attribute name");
    attribute = args.positional[next++];
  }
  std::string test;
  if (next < args.positional.size()) test = str(args.positional[next++]);
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next),
                              args.positional.end());
  ValueList out;
  for (const Value& item : iterate(v)) {
    Value subject = by_attribute ? attribute_path(in, item, attribute) : item;
    bool passed = test.empty() ? subject.truthy() : in.apply_test(test, subject, test_args);
    if (passed == keep_when) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filter_select(Interpreter& in, const Value& v, const CallArgs& args) {
  return select_items(in, v, args, false, true);
}
Value filter_reject(Interpreter& in, const Value& v, const CallArgs& args) {
  return select_items(in, v, args, false, false);
}
Value filter_selectattr(Interpreter& in, const Value& v, const CallArgs& args) {
  return select_items(in, v, args, true, true);
}
Value filter_rejectattr(Interpreter& in, const Value& v, const CallArgs& args) {
  return select_items(in, v, args, true, false);
}

Value filter_unique(Interpreter& in, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "unique", {"case_sensitive", "attribute"});
  bool case_sensitive = reader.get(0).truthy();
  ValueList out;
  ValueList seen;
  for (const Value& item : iterate(v)) {
    Value key =
        sort_key(reader.has(1) ? attribute_path(in, item, reader.get(1)) : item, case_sensitive);
    bool duplicate =
        std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, key); });
    if (!duplicate) {
      seen.push_back(std::move(key));
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value filter_sort(Interpreter& in, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "sort", {"reverse", "case_sensitive", "attribute"});
  bool reverse = reader.get(0).truthy();
  bool case_sensitive = reader.get(1).truthy();
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : iterate(v)) {
    Value key = reader.has(2) ? attribute_path(in, item, reader.get(2)) : item;
    keyed.emplace_back(sort_key(key, case_sensitive), item);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    int order = ordered(a.first, b.first);
    return reverse ? order > 0 : order < 0;
  });
  ValueList out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value filter_dictsort(Interpreter&, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "dictsort", {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) fail("filter 'dictsort' needs a mapping");
  bool case_sensitive = reader.get(0).truthy();
  bool by_value = reader.has(1) && str(reader.get(1)) == "value";
  bool reverse = reader.get(2).truthy();
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [key, item] : v.as_dict()) {
    Value pair = Value::list({Value::string(key), item});
    keyed.emplace_back(sort_key(by_value ? item : Value::string(key), case_sensitive), pair);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    int order = ordered(a.first, b.first);
    return reverse ? order > 0 : order < 0;
  });
  ValueList out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value filter_identity(Interpreter&, const Value& v, const CallArgs&) {
  return v;
}

Value filter_escape(Interpreter&, const Value& v, const CallArgs&) {
  std::string out;
  for (char c : str(v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return Value::string(std::move(out));
}

Value filter_abs(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_float()) return Value::floating(std::fabs(v.as_float()));
  if (v.is_int()) {
    if (v.as_int() == std::numeric_limits<std::int64_t>::min()) fail("integer overflow");
    return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_bool()) return Value::integer(v.as_bool() ? 1 : 0);
  fail("bad operand type for abs(): '" + std::string(type_name(v)) + "'");
}

Value filter_round(Interpreter&, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "round", {"precision", "method"});
  if (!v.is_number()) fail("filter 'round' needs a number");
  std::int64_t precision =
      std::clamp<std::int64_t>(int_argument(reader.get(0), 0, "precision"), -300, 300);
  std::string method = reader.has(1) ? str(reader.get(1)) : "common";
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.to_double() * scale;
  if (method == "common") {
    x = std::nearbyint(x);  // Python's round(): ties to even
  } else if (method == "floor") {
    x = std::floor(x);
  } else if (method == "ceil") {
    x = std::ceil(x);
  } else {
    fail("round: method must be 'common', 'floor' or 'ceil'");
  }
  return Value::floating(x / scale);
}

Value filter_reverse(Interpreter&, const Value& v, const CallArgs&) {
  if (v.is_string()) {
    std::vector<std::string> chars = text::code_points(v.as_string());
    std::string out;
    for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += *it;
    return Value::string(std::move(out));
  }
  ValueList items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value filter_sum(Interpreter& in, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "sum", {"attribute", "start"});
  Value total = reader.has(1) ? reader.get(1) : Value::integer(0);
  for (const Value& item : iterate(v)) {
    Value term = reader.has(0) ? attribute_path(in, item, reader.get(0)) : item;
    if (!term.is_number() || !total.is_number()) fail("sum: items must be numbers");
    if (total.is_float() || term.is_float()) {
      total = Value::floating(total.to_double() + term.to_double());
    } else {
      std::int64_t result = 0;
      auto as_int = [](const Value& x) { return x.is_bool() ? (x.as_bool() ? 1 : 0) : x.as_int(); };
      if (__builtin_add_overflow(as_int(total), as_int(term), &result)) fail("integer overflow");
      total = Value::integer(result);
    }
  }
  return total;
}

Value extreme(Interpreter& in, const Value& v, const CallArgs& args, bool want_max) {
  ArgumentReader reader(args, want_max ? "max" : "min", {"case_sensitive", "attribute"});
  bool case_sensitive = reader.get(0).truthy();
  Value best;
  Value best_key;
  for (const Value& item : iterate(v)) {
    Value key =
        sort_key(reader.has(1) ? attribute_path(in, item, reader.get(1)) : item, case_sensitive);
    if (best.is_undefined() ||
        (want_max ? ordered(key, best_key) > 0 : ordered(key, best_key) < 0)) {
      best = item;
      best_key = std::move(key);
    }
  }
  return best;
}

Value filter_min(Interpreter& in, const Value& v, const CallArgs& args) {
  return extreme(in, v, args, false);
}
Value filter_max(Interpreter& in, const Value& v, const CallArgs& args) {
  return extreme(in, v, args, true);
}

Value filter_attr(Interpreter& in, const Value& v, const CallArgs& args) {
  ArgumentReader reader(args, "attr", {"name"});
  return in.get_attribute(v, str(reader.get(0)));
}

Value filter_wordcount(Interpreter&, const Value& v, const CallArgs&) {
  return Value::integer(static_cast<std::int64_t>(text::split(str(v), std::nullopt, -1).size()));
}

const std::pair<std::string_view, FilterFunction> kFilters[] = {
    {"tojson", filter_tojson},
    {"trim", filter_trim},
    {"length", filter_length},
    {"count", filter_length},
    {"default", filter_default},
    {"d", filter_default},
    {"join", filter_join},
    {"upper", filter_upper},
    {"lower", filter_lower},
    {"capitalize", filter_capitalize},
    {"title", filter_title},
    {"replace", filter_replace},
    {"items", filter_items},
    {"list", filter_list},
    {"first", filter_first},
    {"last", filter_last},
    {"string", filter_string},
    {"int", filter_int},
    {"float", filter_float},
    {"indent", filter_indent},
    {"map", filter_map},
    {"select", filter_select},
    {"reject", filter_reject},
    {"selectattr", filter_selectattr},
    {"rejectattr", filter_rejectattr},
    {"unique", filter_unique},
    {"sort", filter_sort},
    {"dictsort", filter_dictsort},
    {"safe", filter_identity},
    {"e", filter_escape},
    {"escape", filter_escape},
    {"forceescape", filter_escape},
    {"abs", filter_abs},
    {"round", filter_round},
    {"reverse", filter_reverse},
    {"sum", filter_sum},
    {"min", filter_min},
    {"max", filter_max},
    {"attr", filter_attr},
    {"wordcount", filter_wordcount},
};

}  // namespace

FilterFunction find_filter(std::string_view name) {
  for (const auto& [filter_name, filter] : kFilters) {
    if (filter_name == name) return filter;
  }
  return nullptr;
}

}  // namespace tern::engine::chat
