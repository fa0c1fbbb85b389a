#pragma once

// The built-in filters, tests, methods and global functions of the template language: what
// Jinja and transformers provide, as far as Hugging Face chat templates use it.
#include <string_view>
#include <vector>

#include "engine/chat/value.h"

namespace tern::engine::chat {

class Interpreter;

using FilterFunction = Value (*)(Interpreter&, const Value& operand, const CallArgs& args);
using TestFunction = bool (*)(Interpreter&, const Value& operand, const CallArgs& args);

// nullptr when there is no such filter or test.
FilterFunction find_filter(std::string_view name);
TestFunction find_test(std::string_view name);

// Methods of str, list and dict values, with Python's meaning (`s.startswith('a')`, `d.items()`).
bool has_method(const Value& self, std::string_view name);
Value call_method(Interpreter& interpreter, const Value& self, std::string_view name,
                  const CallArgs& args);

// range, namespace, dict, raise_exception, strftime_now.
void add_global_functions(Interpreter& interpreter, ValueDict& globals);

// The items a for loop visits: a list's items, a dict's keys, a string's characters; nothing for
// undefined. Throws for values that cannot be iterated.
ValueList iterate(const Value& value);

// Reads Python-style arguments: positional first, then by keyword; rejects unknown keywords and
// surplus positional arguments.
class ArgumentReader {
 public:
  ArgumentReader(const CallArgs& args, std::string_view function,
                 std::initializer_list<std::string_view> names);
  // The argument at `index` of the signature, or undefined when absent.
  const Value& get(std::size_t index) const;
  bool has(std::size_t index) const { return !get(index).is_undefined(); }

 private:
  std::vector<const Value*> values_;
};

}  // namespace tern::engine::chat
