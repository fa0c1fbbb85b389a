#include "engine/chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace tern::engine::chat {

namespace {

// Printing and comparing recurse; the interpreter keeps values far shallower than this.
constexpr int kMaxPrintDepth = 512;

}  // namespace

struct Value::ListData {
  ValueList items;
  int depth = 1;
  bool has_reference = false;
};

struct Value::DictData {
  ValueDict entries;
  int depth = 1;
  bool has_reference = false;
  bool is_namespace = false;
};

// Dicts in chat contexts are small (a message has two to four keys), so a linear search beats
// keeping a hash index beside the ordered entries.
std::optional<std::size_t> ValueDict::index_of(std::string_view key) const {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].first == key) return i;
  }
  return std::nullopt;
}

const Value* ValueDict::find(std::string_view key) const {
  auto index = index_of(key);
  return index ? &entries_[*index].second : nullptr;
}

void ValueDict::set(std::string key, Value value) {
  if (auto index = index_of(key)) {
    entries_[*index].second = std::move(value);
  } else {
    entries_.emplace_back(std::move(key), std::move(value));
  }
}

const Value* CallArgs::find_keyword(std::string_view name) const {
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

namespace {

class NativeCallable final : public Callable {
 public:
  NativeCallable(std::string name, NativeFunction function)
      : name_(std::move(name)), function_(std::move(function)) {}
  const std::string& name() const override { return name_; }
  Expected<Value> call(const CallArgs& args) const override { return function_(args); }

 private:
  std::string name_;
  NativeFunction function_;
};

}  // namespace

Value Value::none() {
  Value value;
  value.data_ = None{};
  return value;
}

Value Value::boolean(bool b) {
  Value value;
  value.data_ = b;
  return value;
}

Value Value::integer(std::int64_t i) {
  Value value;
  value.data_ = i;
  return value;
}

Value Value::floating(double d) {
  Value value;
  value.data_ = d;
  return value;
}

Value Value::string(std::string s) {
  Value value;
  value.data_ = std::move(s);
  return value;
}

Value Value::list(ValueList items) {
  auto data = std::make_shared<ListData>();
  for (const Value& item : items) {
    data->depth = std::max(data->depth, item.depth() + 1);
    data->has_reference = data->has_reference || item.contains_reference();
  }
  data->items = std::move(items);
  Value value;
  value.data_ = std::shared_ptr<const ListData>(std::move(data));
  return value;
}

Value Value::dict(ValueDict entries) {
  auto data = std::make_shared<DictData>();
  for (const auto& [key, item] : entries) {
    data->depth = std::max(data->depth, item.depth() + 1);
    data->has_reference = data->has_reference || item.contains_reference();
  }
  data->entries = std::move(entries);
  Value value;
  value.data_ = std::move(data);
  return value;
}

Value Value::namespace_object(ValueDict entries) {
  Value value = dict(std::move(entries));
  auto& data = std::get<std::shared_ptr<DictData>>(value.data_);
  data->is_namespace = true;
  data->has_reference = true;
  return value;
}

Value Value::callable(std::shared_ptr<const Callable> callable) {
  Value value;
  value.data_ = std::move(callable);
  return value;
}

Value Value::function(std::string name, NativeFunction function) {
  return callable(std::make_shared<NativeCallable>(std::move(name), std::move(function)));
}

bool Value::is_namespace() const {
  return is_dict() && std::get<std::shared_ptr<DictData>>(data_)->is_namespace;
}

double Value::to_double() const {
  switch (kind()) {
    case Kind::kInt:
      return static_cast<double>(as_int());
    case Kind::kFloat:
      return as_float();
    case Kind::kBool:
      return as_bool() ? 1.0 : 0.0;
    default:
      return 0.0;
  }
}

const ValueList& Value::as_list() const {
  return std::get<std::shared_ptr<const ListData>>(data_)->items;
}

const ValueDict& Value::as_dict() const {
  return std::get<std::shared_ptr<DictData>>(data_)->entries;
}

bool Value::set_namespace_attribute(std::string key, Value value) const {
  if (!is_namespace()) return false;
  auto& data = std::get<std::shared_ptr<DictData>>(data_);
  data->depth = std::max(data->depth, value.depth() + 1);
  data->entries.set(std::move(key), std::move(value));
  return true;
}

int Value::depth() const {
  switch (kind()) {
    case Kind::kList:
      return std::get<std::shared_ptr<const ListData>>(data_)->depth;
    case Kind::kDict:
      return std::get<std::shared_ptr<DictData>>(data_)->depth;
    default:
      return 0;
  }
}

bool Value::contains_reference() const {
  switch (kind()) {
    case Kind::kList:
      return std::get<std::shared_ptr<const ListData>>(data_)->has_reference;
    case Kind::kDict:
      return std::get<std::shared_ptr<DictData>>(data_)->has_reference;
    case Kind::kCallable:
      return true;
    default:
      return false;
  }
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_float() != 0.0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kList:
      return !as_list().empty();
    case Kind::kDict:
      return !as_dict().empty();
    case Kind::kCallable:
      return true;
  }
  return false;
}

Value Value::item(std::string_view key) const {
  if (!is_dict()) return Value();
  const Value* found = as_dict().find(key);
  return found ? *found : Value();
}

std::string_view type_name(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return "undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return "list";
    case Value::Kind::kDict:
      return value.is_namespace() ? "Namespace" : "dict";
    case Value::Kind::kCallable:
      return "function";
  }
  return "object";
}

std::string format_python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form, then laid out the way Python's repr does:
  // positional for exponents in [-4, 16), scientific otherwise.
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string_view text(buffer, static_cast<std::size_t>(result.ptr - buffer));
  bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  std::size_t e_pos = text.find('e');
  std::string_view mantissa = text.substr(0, e_pos);
  int exponent = 0;
  std::from_chars(text.data() + e_pos + 1 + (text[e_pos + 1] == '+' ? 1 : 0),
                  text.data() + text.size(), exponent);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0.";
      out.append(static_cast<std::size_t>(-exponent - 1), '0');
      out += digits;
    } else {
      auto integer_digits = static_cast<std::size_t>(exponent) + 1;
      if (digits.size() <= integer_digits) {
        out += digits;
        out.append(integer_digits - digits.size(), '0');
        out += ".0";
      } else {
        out += digits.substr(0, integer_digits);
        out += '.';
        out += digits.substr(integer_digits);
      }
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    char exponent_text[16];
    std::snprintf(exponent_text, sizeof exponent_text, "e%c%02d", exponent < 0 ? '-' : '+',
                  exponent < 0 ? -exponent : exponent);
    out += exponent_text;
  }
  return out;
}

namespace {

void append_repr_string(std::string& out, const std::string& s) {
  char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  out += quote;
  for (unsigned char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c == static_cast<unsigned char>(quote)) {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += quote;
}

void append_python(std::string& out, const Value& value, bool repr, int depth) {
  if (depth > kMaxPrintDepth) {
    out += "...";
    return;
  }
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return;
    case Value::Kind::kNone:
      out += "None";
      return;
    case Value::Kind::kBool:
      out += value.as_bool() ? "True" : "False";
      return;
    case Value::Kind::kInt:
      out += std::to_string(value.as_int());
      return;
    case Value::Kind::kFloat:
      out += format_python_float(value.as_float());
      return;
    case Value::Kind::kString:
      if (repr) {
        append_repr_string(out, value.as_string());
      } else {
        out += value.as_string();
      }
      return;
    case Value::Kind::kList: {
      out += '[';
      bool first = true;
      for (const Value& item : value.as_list()) {
        if (!first) out += ", ";
        first = false;
        append_python(out, item, true, depth + 1);
      }
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      if (value.is_namespace()) out += "<Namespace ";
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.as_dict()) {
        if (!first) out += ", ";
        first = false;
        append_repr_string(out, key);
        out += ": ";
        append_python(out, item, true, depth + 1);
      }
      out += '}';
      if (value.is_namespace()) out += '>';
      return;
    }
    case Value::Kind::kCallable:
      out += "<function " + value.as_callable()->name() + ">";
      return;
  }
}

bool equal_at_depth(const Value& a, const Value& b, int depth) {
  if (depth > kMaxPrintDepth) return false;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
    auto as_integer = [](const Value& v) -> std::int64_t {
      return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int();
    };
    return as_integer(a) == as_integer(b);
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      const ValueList& x = a.as_list();
      const ValueList& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!equal_at_depth(x[i], y[i], depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const ValueDict& x = a.as_dict();
      const ValueDict& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [key, item] : x) {
        const Value* other = y.find(key);
        if (other == nullptr || !equal_at_depth(item, *other, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable:
      return a.as_callable() == b.as_callable();
    default:
      return false;
  }
}

}  // namespace

std::string to_python_str(const Value& value) {
  if (value.is_string()) return value.as_string();
  std::string out;
  append_python(out, value, false, 0);
  return out;
}

std::string to_python_repr(const Value& value) {
  std::string out;
  append_python(out, value, true, 0);
  return out;
}

bool values_equal(const Value& a, const Value& b) {
  return equal_at_depth(a, b, 0);
}

std::optional<int> compare_values(const Value& a, const Value& b) {
  auto sign = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.to_double();
      double y = b.to_double();
      if (std::isnan(x) || std::isnan(y)) return std::nullopt;
      return sign(x, y);
    }
    auto as_integer = [](const Value& v) -> std::int64_t {
      return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int();
    };
    return sign(as_integer(a), as_integer(b));
  }
  if (a.is_string() && b.is_string()) return sign(a.as_string(), b.as_string());
  if (a.is_list() && b.is_list()) {
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (values_equal(x[i], y[i])) continue;
      return compare_values(x[i], y[i]);
    }
    return sign(x.size(), y.size());
  }
  return std::nullopt;
}

}  // namespace tern::engine::chat
