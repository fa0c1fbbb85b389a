#pragma once

// The values a chat template computes with. They follow Python's data model as Jinja sees it:
// undefined, None, bool, int, float, str, list, dict (insertion-ordered) and callables. Lists and
// dicts are shared and immutable once built, except namespace() objects, whose attributes
// `{% set ns.x = ... %}` assigns and which refuse namespaces and functions (see
// contains_reference()); so no value can contain itself, and every container knows its
// nesting depth, which lets the interpreter refuse values deep enough to exhaust the stack.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "engine/expected.h"

namespace tern::engine::chat {

class Value;
using ValueList = std::vector<Value>;

// Keys are strings (JSON's), kept in insertion order as Python dicts keep them.
class ValueDict {
 public:
  using Entry = std::pair<std::string, Value>;

  const Value* find(std::string_view key) const;
  // Replaces the value of an existing key in place (keeping its position), else appends.
  void set(std::string key, Value value);
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  std::optional<std::size_t> index_of(std::string_view key) const;

  std::vector<Entry> entries_;
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  const Value* find_keyword(std::string_view name) const;
};

// A function a template can call: a built-in, a macro, or one the caller provides.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual const std::string& name() const = 0;
  virtual Expected<Value> call(const CallArgs& args) const = 0;
};

using NativeFunction = std::function<Expected<Value>(const CallArgs&)>;

class Value {
 public:
  enum class Kind : std::uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kCallable,
  };

  Value() = default;  // undefined
  static Value none();
  static Value boolean(bool value);
  static Value integer(std::int64_t value);
  static Value floating(double value);
  static Value string(std::string value);
  static Value list(ValueList items);
  static Value dict(ValueDict entries);
  // A mutable attribute bag: Jinja's namespace(), the one object templates may assign into.
  static Value namespace_object(ValueDict entries);
  static Value callable(std::shared_ptr<const Callable> callable);
  static Value function(std::string name, NativeFunction function);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  // Python's numbers include bool, as Jinja's `number` test does.
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_namespace() const;

  bool as_bool() const { return std::get<bool>(data_); }
  std::int64_t as_int() const { return std::get<std::int64_t>(data_); }
  double as_float() const { return std::get<double>(data_); }
  // An int, float or bool as a double.
  double to_double() const;
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const ValueList& as_list() const;
  const ValueDict& as_dict() const;
  const std::shared_ptr<const Callable>& as_callable() const {
    return std::get<std::shared_ptr<const Callable>>(data_);
  }

  // Assigns an attribute of a namespace object; false if this is not one.
  bool set_namespace_attribute(std::string key, Value value) const;

  // Nesting depth of containers: 0 for scalars, 1 for a flat list.
  int depth() const;
  // Whether this value is or holds a namespace or a function: the things through which a value
  // could come to contain itself, so they may not be stored into a namespace.
  bool contains_reference() const;

  bool truthy() const;
  // A dict's item, or undefined.
  Value item(std::string_view key) const;

 private:
  struct None {};
  struct ListData;
  struct DictData;

  std::variant<std::monostate, None, bool, std::int64_t, double, std::string,
               std::shared_ptr<const ListData>, std::shared_ptr<DictData>,
               std::shared_ptr<const Callable>>
      data_;
};

// Python's type names, for error messages.
std::string_view type_name(const Value& value);

// str(value) as Jinja prints it: undefined is empty, None is "None", floats as Python's repr.
std::string to_python_str(const Value& value);
// repr(value): strings quoted, as they appear inside printed lists and dicts.
std::string to_python_repr(const Value& value);
// Python's repr of a float: shortest round-trip digits, "1.0", "1e-05", "inf".
std::string format_python_float(double value);

// Python's ==: numbers by value across int/float/bool, containers element-wise.
bool values_equal(const Value& a, const Value& b);
// Python's ordering (<0, 0, >0) for numbers, strings and lists; nullopt when they do not compare.
std::optional<int> compare_values(const Value& a, const Value& b);

}  // namespace tern::engine::chat
