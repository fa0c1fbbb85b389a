// Python methods of str, dict and list values, as templates call them: `content.split('</think>')`,
// `message.get('tool_calls')`, `tools.items()`. Lists are immutable here, so append() and friends
// are refused with a message rather than silently doing nothing.
#include <algorithm>
#include <utility>

#include "engine/chat/builtins.h"
#include "engine/chat/interpreter.h"
#include "engine/chat/template_error.h"
#include "engine/chat/text.h"

namespace tern::engine::chat {

namespace {

[[noreturn]] void fail(const std::string& message) {
  throw TemplateError(message);
}

constexpr std::string_view kStringMethods[] = {
    "startswith", "endswith",   "split",      "rsplit",  "strip",   "lstrip",  "rstrip",  "upper",
    "lower",      "title",      "capitalize", "replace", "format",  "join",    "find",    "rfind",
    "count",      "splitlines", "isdigit",    "isalpha", "isalnum", "isspace", "islower", "isupper",
};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get"};
constexpr std::string_view kListMethods[] = {"index",  "count", "append", "extend",
                                             "insert", "pop",   "remove", "clear"};

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

std::optional<std::string> optional_string(const Value& v, std::string_view what) {
  if (v.is_undefined() || v.is_none()) return std::nullopt;
  if (!v.is_string()) fail(std::string(what) + " must be a string or None");
  return v.as_string();
}

long long optional_int(const Value& v, long long if_absent, std::string_view what) {
  if (v.is_undefined() || v.is_none()) return if_absent;
  if (!v.is_int()) fail(std::string(what) + " must be an integer");
  return v.as_int();
}

Value string_list(std::vector<std::string> parts) {
  ValueList items;
  items.reserve(parts.size());
  for (std::string& part : parts) items.push_back(Value::string(std::move(part)));
  return Value::list(std::move(items));
}

// startswith/endswith take a string or a tuple of strings.
bool affix_matches(const std::string& s, const Value& affix, bool prefix) {
  auto matches = [&](const Value& candidate) {
    if (!candidate.is_string()) fail("startswith/endswith need a string or a tuple of strings");
    return prefix ? std::string_view(s).starts_with(candidate.as_string())
                  : std::string_view(s).ends_with(candidate.as_string());
  };
  if (affix.is_list()) {
    return std::any_of(affix.as_list().begin(), affix.as_list().end(), matches);
  }
  return matches(affix);
}

// str.format with {}, {0} and {name} fields; format specs are not supported.
std::string python_format(const std::string& format, const CallArgs& args) {
  std::string out;
  std::size_t auto_index = 0;
  for (std::size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') ++i;
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    std::size_t close = format.find('}', i);
    if (close == std::string::npos) fail("format: single '{' encountered");
    std::string field = format.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos) fail("format: specs are not supported");
    const Value* value = nullptr;
    if (field.empty() ||
        std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      std::size_t index = field.empty() ? auto_index++ : std::stoul(field);
      if (index >= args.positional.size()) fail("format: index out of range");
      value = &args.positional[index];
    } else {
      value = args.find_keyword(field);
      if (value == nullptr) fail("format: no argument named '" + field + "'");
    }
    out += to_python_str(*value);
    i = close;
  }
  return out;
}

Value string_method(Interpreter& in, const std::string& s, std::string_view name,
                    const CallArgs& args) {
  if (name == "startswith" || name == "endswith") {
    ArgumentReader reader(args, name, {"prefix"});
    return Value::boolean(affix_matches(s, reader.get(0), name == "startswith"));
  }
  if (name == "split" || name == "rsplit") {
    ArgumentReader reader(args, name, {"sep", "maxsplit"});
    std::optional<std::string> sep = optional_string(reader.get(0), "sep");
    if (sep && sep->empty()) fail("empty separator");
    long long max_split = optional_int(reader.get(1), -1, "maxsplit");
    return string_list(name == "split" ? text::split(s, sep, max_split)
                                       : text::rsplit(s, sep, max_split));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgumentReader reader(args, name, {"chars"});
    std::optional<std::string> chars = optional_string(reader.get(0), "chars");
    return Value::string(text::strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "upper") return Value::string(text::to_upper(s));
  if (name == "lower") return Value::string(text::to_lower(s));
  if (name == "title") return Value::string(text::title(s));
  if (name == "capitalize") return Value::string(text::capitalize(s));
  if (name == "replace") {
    ArgumentReader reader(args, name, {"old", "new", "count"});
    if (!reader.get(0).is_string() || !reader.get(1).is_string()) {
      fail("replace() needs two strings");
    }
    const std::string& old_text = reader.get(0).as_string();
    const std::string& new_text = reader.get(1).as_string();
    if (new_text.size() > old_text.size()) {
      in.check_size(
          s.size() + text::count_occurrences(s, old_text) * (new_text.size() - old_text.size()),
          "string");
    }
    return Value::string(
        text::replace(s, old_text, new_text, optional_int(reader.get(2), -1, "count")));
  }
  if (name == "format") return Value::string(python_format(s, args));
  if (name == "join") {
    ArgumentReader reader(args, name, {"iterable"});
    std::string out;
    bool first = true;
    for (const Value& item : iterate(reader.get(0))) {
      if (!item.is_string())
        fail("join() needs strings, got '" + std::string(type_name(item)) + "'");
      if (!first) out += s;
      first = false;
      out += item.as_string();
      in.check_size(out.size(), "joined string");
    }
    return Value::string(std::move(out));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    ArgumentReader reader(args, name, {"sub"});
    if (!reader.get(0).is_string()) fail(std::string(name) + "() needs a string");
    const std::string& sub = reader.get(0).as_string();
    if (name == "count") {
      return Value::integer(static_cast<std::int64_t>(text::count_occurrences(s, sub)));
    }
    std::size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
    if (at == std::string::npos) return Value::integer(-1);
    return Value::integer(
        static_cast<std::int64_t>(text::code_point_count(std::string_view(s).substr(0, at))));
  }
  if (name == "splitlines") return string_list(text::split_lines(s));
  auto all_of = [&](auto predicate) {
    return Value::boolean(!s.empty() && std::all_of(s.begin(), s.end(), predicate));
  };
  if (name == "isdigit") return all_of([](char c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") {
    return all_of([](char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; });
  }
  if (name == "isalnum") {
    return all_of(
        [](char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); });
  }
  if (name == "isspace") return all_of([](char c) { return text::is_python_space(c); });
  bool has_letter = std::any_of(s.begin(), s.end(),
                                [](char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; });
  if (name == "islower") return Value::boolean(has_letter && text::to_lower(s) == s);
  if (name == "isupper") return Value::boolean(has_letter && text::to_upper(s) == s);
  fail("'str' object has no attribute '" + std::string(name) + "'");
}

Value dict_method(const Value& self, std::string_view name, const CallArgs& args) {
  const ValueDict& dict = self.as_dict();
  if (name == "get") {
    ArgumentReader reader(args, name, {"key", "default"});
    const Value& key = reader.get(0);
    const Value* found = key.is_string() ? dict.find(key.as_string()) : nullptr;
    if (found != nullptr) return *found;
    return reader.has(1) ? reader.get(1) : Value::none();
  }
  ArgumentReader reader(args, name, {});
  ValueList out;
  out.reserve(dict.size());
  for (const auto& [key, item] : dict) {
    if (name == "items") {
      out.push_back(Value::list({Value::string(key), item}));
    } else if (name == "keys") {
      out.push_back(Value::string(key));
    } else {
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

Value list_method(const Value& self, std::string_view name, const CallArgs& args) {
  const ValueList& list = self.as_list();
  if (name == "index" || name == "count") {
    ArgumentReader reader(args, name, {"value"});
    std::int64_t count = 0;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!values_equal(list[i], reader.get(0))) continue;
      if (name == "index") return Value::integer(static_cast<std::int64_t>(i));
      ++count;
    }
    if (name == "index") fail("list.index(x): x not in list");
    return Value::integer(count);
  }
  fail("list." + std::string(name) + "() is not supported: lists are immutable in chat templates");
}

}  // namespace

bool has_method(const Value& self, std::string_view name) {
  if (self.is_string()) return listed(kStringMethods, name);
  if (self.is_dict()) return !self.is_namespace() && listed(kDictMethods, name);
  if (self.is_list()) return listed(kListMethods, name);
  return false;
}

Value call_method(Interpreter& interpreter, const Value& self, std::string_view name,
                  const CallArgs& args) {
  if (self.is_string()) return string_method(interpreter, self.as_string(), name, args);
  if (self.is_dict()) return dict_method(self, name, args);
  if (self.is_list()) return list_method(self, name, args);
  fail("'" + std::string(type_name(self)) + "' object has no attribute '" + std::string(name) +
       "'");
}

}  // namespace tern::engine::chat
