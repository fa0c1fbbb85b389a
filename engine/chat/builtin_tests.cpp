// Jinja's tests (`x is defined`, `x is string`, ...), with Python's types behind them.
#include <cmath>
#include <utility>

#include "engine/chat/builtins.h"
#include "engine/chat/template_error.h"

namespace tern::engine::chat {

namespace {

const Value& argument(const CallArgs& args, std::string_view test) {
  if (args.positional.empty()) {
    throw TemplateError("test '" + std::string(test) + "' needs an argument");
  }
  return args.positional[0];
}

bool compare_test(const Value& a, const Value& b, std::string_view op, bool (*accept)(int)) {
  std::optional<int> order = compare_values(a, b);
  if (!order) {
    throw TemplateError("'" + std::string(op) + "' not supported between '" +
                        std::string(type_name(a)) + "' and '" + std::string(type_name(b)) + "'");
  }
  return accept(*order);
}

bool is_integer_value(const Value& v) {
  return v.is_int();
}

const std::pair<std::string_view, TestFunction> kTests[] = {
    {"defined", [](Interpreter&, const Value& v, const CallArgs&) { return !v.is_undefined(); }},
    {"undefined", [](Interpreter&, const Value& v, const CallArgs&) { return v.is_undefined(); }},
    {"none", [](Interpreter&, const Value& v, const CallArgs&) { return v.is_none(); }},
    {"string", [](Interpreter&, const Value& v, const CallArgs&) { return v.is_string(); }},
    {"mapping", [](Interpreter&, const Value& v, const CallArgs&) { return v.is_dict(); }},
    {"iterable",
     [](Interpreter&, const Value& v, const CallArgs&) {
       return v.is_list() || v.is_dict() || v.is_string();
     }},
    {"sequence",
     [](Interpreter&, const Value& v, const CallArgs&) {
       return v.is_list() || v.is_dict() || v.is_string();
     }},
    {"number", [](Interpreter&, const Value& v, const CallArgs&) { return v.is_number(); }},
    {"integer", [](Interpreter&, const Value& v, const CallArgs&) { return is_integer_value(v); }},
    {"float", [](Interpreter&, const Value& v, const CallArgs&) { return v.is_float(); }},
    {"boolean", [](Interpreter&, const Value& v, const CallArgs&) { return v.is_bool(); }},
    {"true",
     [](Interpreter&, const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
    {"false",
     [](Interpreter&, const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
    {"callable", [](Interpreter&, const Value& v, const CallArgs&) { return v.is_callable(); }},
    {"odd",
     [](Interpreter&, const Value& v, const CallArgs&) {
       if (!v.is_int()) throw TemplateError("test 'odd' needs an integer");
       return v.as_int() % 2 != 0;
     }},
    {"even",
     [](Interpreter&, const Value& v, const CallArgs&) {
       if (!v.is_int()) throw TemplateError("test 'even' needs an integer");
       return v.as_int() % 2 == 0;
     }},
    {"divisibleby",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       const Value& d = argument(args, "divisibleby");
       if (!v.is_int() || !d.is_int()) throw TemplateError("test 'divisibleby' needs integers");
       if (d.as_int() == 0) throw TemplateError("test 'divisibleby': division by zero");
       return d.as_int() == -1 || v.as_int() % d.as_int() == 0;
     }},
    {"lower",
     [](Interpreter&, const Value& v, const CallArgs&) {
       if (!v.is_string()) return false;
       for (char c : v.as_string()) {
         if (c >= 'A' && c <= 'Z') return false;
       }
       return true;
     }},
    {"upper",
     [](Interpreter&, const Value& v, const CallArgs&) {
       if (!v.is_string()) return false;
       for (char c : v.as_string()) {
         if (c >= 'a' && c <= 'z') return false;
       }
       return true;
     }},
    {"eq",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return values_equal(v, argument(args, "eq"));
     }},
    {"equalto",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return values_equal(v, argument(args, "equalto"));
     }},
    {"==",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return values_equal(v, argument(args, "=="));
     }},
    {"ne",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return !values_equal(v, argument(args, "ne"));
     }},
    {"!=",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return !values_equal(v, argument(args, "!="));
     }},
    {"lt",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return compare_test(v, argument(args, "lt"), "<", [](int o) { return o < 0; });
     }},
    {"lessthan",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return compare_test(v, argument(args, "lessthan"), "<", [](int o) { return o < 0; });
     }},
    {"le",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return compare_test(v, argument(args, "le"), "<=", [](int o) { return o <= 0; });
     }},
    {"gt",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return compare_test(v, argument(args, "gt"), ">", [](int o) { return o > 0; });
     }},
    {"greaterthan",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return compare_test(v, argument(args, "greaterthan"), ">", [](int o) { return o > 0; });
     }},
    {"ge",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       return compare_test(v, argument(args, "ge"), ">=", [](int o) { return o >= 0; });
     }},
    {"in",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       const Value& container = argument(args, "in");
       if (container.is_string()) {
         return v.is_string() && container.as_string().find(v.as_string()) != std::string::npos;
       }
       if (container.is_dict()) return v.is_string() && container.as_dict().find(v.as_string()) != nullptr;
       if (container.is_list()) {
         for (const Value& item : container.as_list()) {
           if (values_equal(item, v)) return true;
         }
       }
       return false;
     }},
    {"sameas",
     [](Interpreter&, const Value& v, const CallArgs& args) {
       const Value& other = argument(args, "sameas");
       // Without object identity, same type and equal value is the closest reading.
       return v.kind() == other.kind() && values_equal(v, other);
     }},
};

}  // namespace

TestFunction find_test(std::string_view name) {
  for (const auto& [test_name, test] : kTests) {
    if (test_name == name) return test;
  }
  return nullptr;
}

}  // namespace tern::engine::chat
