// Global functions every chat template can call: Jinja's range, namespace and dict, plus
// transformers' raise_exception and strftime_now.
#include <ctime>

#include "engine/chat/builtins.h"
#include "engine/chat/interpreter.h"
#include "engine/chat/template_error.h"

namespace tern::engine::chat {

namespace {

Expected<Value> range_function(Interpreter& in, const CallArgs& args) {
  if (!args.keyword.empty()) return Error{"range() takes no keyword arguments"};
  if (args.positional.empty() || args.positional.size() > 3) {
    return Error{"range() takes 1 to 3 arguments"};
  }
  std::int64_t bounds[3] = {0, 0, 1};
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    const Value& v = args.positional[i];
    if (!v.is_int() && !v.is_bool()) return Error{"range() arguments must be integers"};
    std::int64_t n = v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int();
    if (args.positional.size() == 1) {
      bounds[1] = n;
    } else {
      bounds[i] = n;
    }
  }
  auto [start, stop, step] = bounds;
  if (step == 0) return Error{"range() step must not be zero"};
  // 128-bit arithmetic: the bounds may be anywhere in int64, and their difference may not fit.
  __int128 span = static_cast<__int128>(stop) - start;
  __int128 count = 0;
  if ((step > 0 && span > 0) || (step < 0 && span < 0)) {
    __int128 magnitude = step > 0 ? span : -span;
    __int128 stride = step > 0 ? step : -static_cast<__int128>(step);
    count = (magnitude + stride - 1) / stride;
  }
  if (count > static_cast<__int128>(in.limits().max_iterations)) {
    return Error{"range() of more than " + std::to_string(in.limits().max_iterations) +
                 " items; stopped as runaway"};
  }
  ValueList items;
  items.reserve(static_cast<std::size_t>(count));
  for (__int128 k = 0; k < count; ++k) {
    items.push_back(Value::integer(static_cast<std::int64_t>(start + k * step)));
  }
  return Value::list(std::move(items));
}

// namespace(mapping?, **attributes) and dict(mapping?, **items).
Expected<Value> mapping_function(const CallArgs& args, bool is_namespace) {
  const char* name = is_namespace ? "namespace" : "dict";
  if (args.positional.size() > 1) return Error{std::string(name) + "() takes at most 1 argument"};
  ValueDict entries;
  if (!args.positional.empty()) {
    const Value& initial = args.positional[0];
    if (!initial.is_dict()) return Error{std::string(name) + "() argument must be a mapping"};
    for (const auto& [key, value] : initial.as_dict()) entries.set(key, value);
  }
  for (const auto& [key, value] : args.keyword) {
    entries.set(key, value);
  }
  return is_namespace ? Value::namespace_object(std::move(entries))
                      : Value::dict(std::move(entries));
}

Expected<Value> raise_exception(const CallArgs& args) {
  std::string message =
      args.positional.empty() ? "raise_exception() called" : to_python_str(args.positional[0]);
  return Error{message};
}

Expected<Value> strftime_now(const CallArgs& args) {
  if (args.positional.size() != 1 || !args.positional[0].is_string()) {
    return Error{"strftime_now() takes one format string"};
  }
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[256];
  std::size_t written =
      std::strftime(buffer, sizeof buffer, args.positional[0].as_string().c_str(), &local);
  return Value::string(std::string(buffer, written));
}

}  // namespace

void add_global_functions(Interpreter& interpreter, ValueDict& globals) {
  Interpreter* in = &interpreter;
  globals.set("range", Value::function("range", [in](const CallArgs& args) {
                return range_function(*in, args);
              }));
  globals.set("namespace", Value::function("namespace", [](const CallArgs& args) {
                return mapping_function(args, true);
              }));
  globals.set("dict", Value::function("dict", [](const CallArgs& args) {
                return mapping_function(args, false);
              }));
  globals.set("raise_exception", Value::function("raise_exception", raise_exception));
  globals.set("strftime_now", Value::function("strftime_now", strftime_now));
}

}  // namespace tern::engine::chat
