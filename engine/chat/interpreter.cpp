#include "engine/chat/interpreter.h"

#include <cmath>
#include <limits>

#include "engine/chat/builtins.h"
#include "engine/chat/text.h"

namespace tern::engine::chat {

// Variables set in one block. For loop iterations and macro calls open a scope; `if` does not,
// as in Jinja. Scopes are shared because a macro keeps the scope it was defined in.
struct Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> variables;

  const Value* find(std::string_view name) const {
    for (const Scope* scope = this; scope != nullptr; scope = scope->parent.get()) {
      for (const auto& [key, value] : scope->variables) {
        if (key == name) return &value;
      }
    }
    return nullptr;
  }
  void set(std::string name, Value value) {
    for (auto& [key, existing] : variables) {
      if (key == name) {
        existing = std::move(value);
        return;
      }
    }
    variables.emplace_back(std::move(name), std::move(value));
  }
};

struct MacroDefinition {
  std::string name;
  const std::vector<MacroParam>* params;
  const Body* body;
  std::shared_ptr<Scope> closure;
};

// A macro (or a call block's body) as a value. The interpreter calls it directly; call() is the
// path for anyone else holding the value, and turns failures into Error values.
class MacroCallable final : public Callable {
 public:
  MacroCallable(Interpreter* interpreter, MacroDefinition definition)
      : interpreter_(interpreter), definition_(std::move(definition)) {}
  const std::string& name() const override { return definition_.name; }
  Expected<Value> call(const CallArgs& args) const override {
    try {
      return interpreter_->invoke_macro(definition_, args, Value());
    } catch (const TemplateError& error) {
      return Error{error.describe()};
    }
  }
  const MacroDefinition& definition() const { return definition_; }
  void release_closure() { definition_.closure.reset(); }

 private:
  Interpreter* interpreter_;
  MacroDefinition definition_;
};

namespace {

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

// Restores a member on scope exit, so nested captures and macro calls unwind cleanly on errors.
template <typename T>
class Restore {
 public:
  Restore(T& slot, T value) : slot_(slot), saved_(std::move(slot)) { slot_ = std::move(value); }
  ~Restore() { slot_ = std::move(saved_); }
  Restore(const Restore&) = delete;
  Restore& operator=(const Restore&) = delete;

 private:
  T& slot_;
  T saved_;
};

[[noreturn]] void fail(const std::string& message) {
  throw TemplateError(message);
}

std::string binary_op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSubtract:
      return "-";
    case BinaryOp::kMultiply:
      return "*";
    case BinaryOp::kDivide:
      return "/";
    case BinaryOp::kFloorDivide:
      return "//";
    case BinaryOp::kModulo:
      return "%";
    case BinaryOp::kPower:
      return "**";
    case BinaryOp::kLess:
      return "<";
    case BinaryOp::kLessEqual:
      return "<=";
    case BinaryOp::kGreater:
      return ">";
    case BinaryOp::kGreaterEqual:
      return ">=";
    default:
      return "?";
  }
}

[[noreturn]] void unsupported(BinaryOp op, const Value& a, const Value& b) {
  if (a.is_undefined() || b.is_undefined()) {
    fail("undefined value used with '" + binary_op_symbol(op) + "'");
  }
  fail("unsupported operand types for " + binary_op_symbol(op) + ": '" + std::string(type_name(a)) +
       "' and '" + std::string(type_name(b)) + "'");
}

std::int64_t int_of(const Value& v) {
  return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int();
}
bool is_integral(const Value& v) {
  return v.is_int() || v.is_bool();
}

template <typename Op>
std::int64_t checked(Op op, std::int64_t x, std::int64_t y) {
  std::int64_t result = 0;
  if (op(x, y, &result)) fail("integer overflow");
  return result;
}

bool add_overflow(std::int64_t x, std::int64_t y, std::int64_t* r) {
  return __builtin_add_overflow(x, y, r);
}
bool sub_overflow(std::int64_t x, std::int64_t y, std::int64_t* r) {
  return __builtin_sub_overflow(x, y, r);
}
bool mul_overflow(std::int64_t x, std::int64_t y, std::int64_t* r) {
  return __builtin_mul_overflow(x, y, r);
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
  if (is_integral(a) && is_integral(b)) {
    std::int64_t x = int_of(a);
    std::int64_t y = int_of(b);
    switch (op) {
      case BinaryOp::kAdd:
        return Value::integer(checked(add_overflow, x, y));
      case BinaryOp::kSubtract:
        return Value::integer(checked(sub_overflow, x, y));
      case BinaryOp::kMultiply:
        return Value::integer(checked(mul_overflow, x, y));
      case BinaryOp::kDivide:
        if (y == 0) fail("division by zero");
        return Value::floating(static_cast<double>(x) / static_cast<double>(y));
      case BinaryOp::kFloorDivide: {
        if (y == 0) fail("integer division or modulo by zero");
        if (x == std::numeric_limits<std::int64_t>::min() && y == -1) fail("integer overflow");
        std::int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value::integer(q);
      }
      case BinaryOp::kModulo: {
        if (y == 0) fail("integer division or modulo by zero");
        if (y == -1) return Value::integer(0);
        std::int64_t m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value::integer(m);
      }
      case BinaryOp::kPower: {
        if (y < 0) return Value::floating(std::pow(static_cast<double>(x), static_cast<double>(y)));
        std::int64_t result = 1;
        std::int64_t base = x;
        while (y > 0) {
          if (y & 1) result = checked(mul_overflow, result, base);
          y >>= 1;
          if (y > 0) base = checked(mul_overflow, base, base);
        }
        return Value::integer(result);
      }
      default:
        break;
    }
  }
  double x = a.to_double();
  double y = b.to_double();
  switch (op) {
    case BinaryOp::kAdd:
      return Value::floating(x + y);
    case BinaryOp::kSubtract:
      return Value::floating(x - y);
    case BinaryOp::kMultiply:
      return Value::floating(x * y);
    case BinaryOp::kDivide:
      if (y == 0) fail("float division by zero");
      return Value::floating(x / y);
    case BinaryOp::kFloorDivide:
      if (y == 0) fail("float floor division by zero");
      return Value::floating(std::floor(x / y));
    case BinaryOp::kModulo: {
      if (y == 0) fail("float modulo");
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value::floating(m);
    }
    case BinaryOp::kPower:
      return Value::floating(std::pow(x, y));
    default:
      break;
  }
  fail("bad arithmetic operator");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        fail("'in <string>' requires string as left operand, not " + std::string(type_name(item)));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& element : container.as_list()) {
        if (values_equal(element, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    default:
      fail("argument of type '" + std::string(type_name(container)) + "' is not iterable");
  }
}

// Python's slice.indices(): clamps start and stop for a sequence of `length` items.
std::vector<std::size_t> slice_indices(std::int64_t length, const Value& start_value,
                                       const Value& stop_value, const Value& step_value) {
  auto as_index = [](const Value& v, const char* what) -> std::optional<std::int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!is_integral(v)) fail(std::string("slice ") + what + " must be an integer or None");
    return int_of(v);
  };
  std::int64_t step = as_index(step_value, "step").value_or(1);
  if (step == 0) fail("slice step cannot be zero");
  auto clamp = [&](std::optional<std::int64_t> index, std::int64_t if_none) {
    if (!index) return if_none;
    std::int64_t i = *index;
    if (i < 0) i += length;
    if (step > 0) return std::clamp<std::int64_t>(i, 0, length);
    return std::clamp<std::int64_t>(i, -1, length - 1);
  };
  std::int64_t start = clamp(as_index(start_value, "start"), step > 0 ? 0 : length - 1);
  std::int64_t stop = clamp(as_index(stop_value, "stop"), step > 0 ? length : -1);
  std::vector<std::size_t> indices;
  if (step > 0) {
    for (std::int64_t i = start; i < stop; i += step)
      indices.push_back(static_cast<std::size_t>(i));
  } else {
    for (std::int64_t i = start; i > stop; i += step)
      indices.push_back(static_cast<std::size_t>(i));
  }
  return indices;
}

Value make_loop_object(const ValueList& items, std::size_t index, const Value& cycle) {
  const auto length = static_cast<std::int64_t>(items.size());
  const auto i = static_cast<std::int64_t>(index);
  ValueDict loop;
  loop.set("index", Value::integer(i + 1));
  loop.set("index0", Value::integer(i));
  loop.set("revindex", Value::integer(length - i));
  loop.set("revindex0", Value::integer(length - i - 1));
  loop.set("first", Value::boolean(i == 0));
  loop.set("last", Value::boolean(i == length - 1));
  loop.set("length", Value::integer(length));
  loop.set("depth", Value::integer(1));
  loop.set("depth0", Value::integer(0));
  loop.set("previtem", index > 0 ? items[index - 1] : Value());
  loop.set("nextitem", index + 1 < items.size() ? items[index + 1] : Value());
  loop.set("cycle", cycle);
  return Value::dict(std::move(loop));
}

}  // namespace

Interpreter::Interpreter(RenderLimits limits) : limits_(limits) {}
Interpreter::~Interpreter() {
  for (const auto& macro : macros_) macro->release_closure();
}

std::string Interpreter::render(const Program& program, const Value& context) {
  globals_ = ValueDict();
  add_global_functions(*this, globals_);
  scope_ = std::make_shared<Scope>();
  if (context.is_dict()) {
    for (const auto& [key, value] : context.as_dict()) scope_->set(key, value);
  }
  std::string output;
  Restore<std::string*> restore(out_, &output);
  exec_body(program.body);
  return output;
}

void Interpreter::check_size(std::size_t size, std::string_view what) const {
  if (size > limits_.max_output_bytes) {
    fail(std::string(what) + " would exceed the limit of " +
         std::to_string(limits_.max_output_bytes) + " bytes");
  }
}

void Interpreter::charge_work(std::size_t bytes) {
  work_ += bytes;
  if (work_ > limits_.max_work_bytes) {
    fail("template built more than " + std::to_string(limits_.max_work_bytes) +
         " bytes of strings; stopped as runaway");
  }
}

void Interpreter::count_iteration() {
  if (++iterations_ > limits_.max_iterations) {
    fail("template exceeded " + std::to_string(limits_.max_iterations) +
         " loop iterations and macro calls; stopped as runaway");
  }
}

void Interpreter::write(std::string_view text) {
  if (out_->size() + text.size() > limits_.max_output_bytes) {
    fail("output would exceed the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  out_->append(text);
}

Value Interpreter::lookup(std::string_view name) const {
  if (const Value* value = scope_->find(name)) return *value;
  if (const Value* value = globals_.find(name)) return *value;
  return Value();
}

void Interpreter::assign(std::string name, Value value) {
  if (value.depth() > limits_.max_value_depth) {
    fail("value nested deeper than " + std::to_string(limits_.max_value_depth) + " levels");
  }
  scope_->set(std::move(name), std::move(value));
}

std::string Interpreter::capture(const Body& body) {
  std::string buffer;
  Restore<std::string*> restore(out_, &buffer);
  exec_body(body);
  return buffer;
}

// ---- statements ----

Interpreter::Flow Interpreter::exec_body(const Body& body) {
  for (const StmtPtr& stmt : body) {
    Flow flow = exec(*stmt);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Stmt& stmt) {
  try {
    return std::visit(Overloaded{
                          [&](const TextStmt& s) {
                            write(s.text);
                            return Flow::kNormal;
                          },
                          [&](const OutputStmt& s) {
                            Value value = eval(*s.value);
                            if (value.is_string()) {
                              write(value.as_string());
                            } else {
                              write(to_python_str(value));
                            }
                            return Flow::kNormal;
                          },
                          [&](const IfStmt& s) { return exec_if(s); },
                          [&](const ForStmt& s) { return exec_for(s); },
                          [&](const SetStmt& s) {
                            exec_set(s);
                            return Flow::kNormal;
                          },
                          [&](const SetBlockStmt& s) {
                            Value value = Value::string(capture(s.body));
                            assign(s.target, apply_filter_chain(s.filters, std::move(value)));
                            return Flow::kNormal;
                          },
                          [&](const MacroStmt& s) {
                            assign(s.name, make_macro(s.name, s.params, s.body));
                            return Flow::kNormal;
                          },
                          [&](const CallBlockStmt& s) {
                            exec_call_block(s, stmt.position);
                            return Flow::kNormal;
                          },
                          [&](const FilterBlockStmt& s) {
                            Value value =
                                apply_filter_chain(s.filters, Value::string(capture(s.body)));
                            write(to_python_str(value));
                            return Flow::kNormal;
                          },
                          [&](const DoStmt& s) {
                            eval(*s.value);
                            return Flow::kNormal;
                          },
                          [&](const BreakStmt&) { return Flow::kBreak; },
                          [&](const ContinueStmt&) { return Flow::kContinue; },
                      },
                      stmt.node);
  } catch (TemplateError& error) {
    if (!error.has_position()) error.set_position(stmt.position);
    throw;
  }
}

Interpreter::Flow Interpreter::exec_if(const IfStmt& stmt) {
  for (const auto& [condition, body] : stmt.branches) {
    if (eval(*condition).truthy()) return exec_body(body);
  }
  return exec_body(stmt.else_body);
}

Interpreter::Flow Interpreter::exec_for(const ForStmt& stmt) {
  ValueList all = iterate(eval(*stmt.iterable));
  auto bind_targets = [&](Scope& scope, const Value& item) {
    if (stmt.targets.size() == 1) {
      scope.set(stmt.targets[0], item);
      return;
    }
    if (!item.is_list()) {
      fail("cannot unpack a '" + std::string(type_name(item)) + "' into " +
           std::to_string(stmt.targets.size()) + " loop variables");
    }
    const ValueList& parts = item.as_list();
    if (parts.size() != stmt.targets.size()) {
      fail("cannot unpack " + std::to_string(parts.size()) + " values into " +
           std::to_string(stmt.targets.size()) + " loop variables");
    }
    for (std::size_t i = 0; i < parts.size(); ++i) scope.set(stmt.targets[i], parts[i]);
  };

  ValueList items;
  if (stmt.filter) {
    for (const Value& item : all) {
      count_iteration();
      auto scope = std::make_shared<Scope>();
      scope->parent = scope_;
      bind_targets(*scope, item);
      Restore<std::shared_ptr<Scope>> restore(scope_, scope);
      if (eval(*stmt.filter).truthy()) items.push_back(item);
    }
  } else {
    items = std::move(all);
  }
  if (items.empty()) return exec_body(stmt.else_body);

  auto cycle_index = std::make_shared<std::size_t>(0);
  for (std::size_t i = 0; i < items.size(); ++i) {
    count_iteration();
    *cycle_index = i;
    Value cycle = Value::function("cycle", [cycle_index](const CallArgs& args) -> Expected<Value> {
      if (args.positional.empty()) return Error{"loop.cycle() needs at least one argument"};
      return args.positional[*cycle_index % args.positional.size()];
    });
    auto scope = std::make_shared<Scope>();
    scope->parent = scope_;
    bind_targets(*scope, items[i]);
    scope->set("loop", make_loop_object(items, i, cycle));
    Restore<std::shared_ptr<Scope>> restore(scope_, scope);
    if (exec_body(stmt.body) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::exec_set(const SetStmt& stmt) {
  Value value = eval(*stmt.value);
  if (!stmt.attribute.empty()) {
    Value target = lookup(stmt.targets[0]);
    if (!target.is_namespace()) {
      fail("cannot assign attribute '" + stmt.attribute + "' on '" + stmt.targets[0] +
           "': only namespace() objects take attribute assignments");
    }
    if (value.contains_reference()) {
      fail("a namespace cannot hold another namespace or a function");
    }
    if (value.depth() > limits_.max_value_depth) {
      fail("value nested deeper than " + std::to_string(limits_.max_value_depth) + " levels");
    }
    target.set_namespace_attribute(stmt.attribute, std::move(value));
    return;
  }
  if (stmt.targets.size() == 1) {
    assign(stmt.targets[0], std::move(value));
    return;
  }
  if (!value.is_list() || value.as_list().size() != stmt.targets.size()) {
    fail("cannot unpack the value into " + std::to_string(stmt.targets.size()) + " variables");
  }
  for (std::size_t i = 0; i < stmt.targets.size(); ++i) {
    assign(stmt.targets[i], value.as_list()[i]);
  }
}

void Interpreter::exec_call_block(const CallBlockStmt& stmt, SourcePosition position) {
  const auto& call = std::get<CallExpr>(stmt.call->node);
  Value callee = eval(*call.callee);
  const auto* macro = callee.is_callable()
                          ? dynamic_cast<const MacroCallable*>(callee.as_callable().get())
                          : nullptr;
  if (macro == nullptr) {
    throw TemplateError("{% call %} needs a macro", position);
  }
  Value caller = make_macro("caller", stmt.caller_params, stmt.body);
  CallArgs args = eval_arguments(call.args);
  Value result = invoke_macro(macro->definition(), args, caller);
  write(result.as_string());
}

Value Interpreter::make_macro(std::string name, const std::vector<MacroParam>& params,
                              const Body& body) {
  MacroDefinition definition{std::move(name), &params, &body, scope_};
  auto macro = std::make_shared<MacroCallable>(this, std::move(definition));
  macros_.push_back(macro);
  return Value::callable(std::move(macro));
}

Value Interpreter::invoke_macro(const MacroDefinition& macro, const CallArgs& args,
                                const Value& caller) {
  count_iteration();
  if (call_depth_ >= limits_.max_call_depth) {
    fail("macro calls nested deeper than " + std::to_string(limits_.max_call_depth) + " levels");
  }
  Restore<int> depth(call_depth_, call_depth_ + 1);
  const std::vector<MacroParam>& params = *macro.params;
  if (args.positional.size() > params.size()) {
    fail("macro '" + macro.name + "' takes " + std::to_string(params.size()) + " arguments, got " +
         std::to_string(args.positional.size()));
  }
  for (const auto& [key, value] : args.keyword) {
    bool known = false;
    for (const MacroParam& param : params) known = known || param.name == key;
    if (!known) fail("macro '" + macro.name + "' has no parameter '" + key + "'");
  }
  auto scope = std::make_shared<Scope>();
  scope->parent = macro.closure;
  Restore<std::shared_ptr<Scope>> restore(scope_, scope);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const MacroParam& param = params[i];
    if (i < args.positional.size()) {
      scope->set(param.name, args.positional[i]);
    } else if (const Value* value = args.find_keyword(param.name)) {
      scope->set(param.name, *value);
    } else if (param.default_value) {
      scope->set(param.name, eval(*param.default_value));
    } else {
      scope->set(param.name, Value());
    }
  }
  if (!caller.is_undefined()) scope->set("caller", caller);
  return Value::string(capture(*macro.body));
}

Value Interpreter::apply_filter_chain(const std::vector<ExprPtr>& filters, Value value) {
  for (const ExprPtr& expr : filters) {
    const auto& filter = std::get<FilterExpr>(expr->node);
    try {
      value = apply_filter(filter.name, value, eval_arguments(filter.args));
    } catch (TemplateError& error) {
      if (!error.has_position()) error.set_position(expr->position);
      throw;
    }
  }
  return value;
}

// ---- expressions ----

Value Interpreter::eval(const Expr& expr) {
  try {
    return eval_node(expr);
  } catch (TemplateError& error) {
    if (!error.has_position()) error.set_position(expr.position);
    throw;
  }
}

CallArgs Interpreter::eval_arguments(const Arguments& args) {
  CallArgs out;
  out.positional.reserve(args.positional.size());
  for (const ExprPtr& arg : args.positional) out.positional.push_back(eval(*arg));
  for (const KeywordArg& arg : args.keyword) out.keyword.emplace_back(arg.name, eval(*arg.value));
  return out;
}

Value Interpreter::eval_node(const Expr& expr) {
  return std::visit(
      Overloaded{
          [&](const LiteralExpr& e) { return e.value; },
          [&](const NameExpr& e) { return lookup(e.name); },
          [&](const ListExpr& e) {
            ValueList items;
            items.reserve(e.items.size());
            for (const ExprPtr& item : e.items) items.push_back(eval(*item));
            return Value::list(std::move(items));
          },
          [&](const DictExpr& e) {
            ValueDict entries;
            for (const auto& [key_expr, value_expr] : e.entries) {
              Value key = eval(*key_expr);
              if (!key.is_string() && !key.is_number() && !key.is_none()) {
                throw TemplateError("dict keys must be strings or numbers", key_expr->position);
              }
              entries.set(to_python_str(key), eval(*value_expr));
            }
            return Value::dict(std::move(entries));
          },
          [&](const AttributeExpr& e) { return get_attribute(eval(*e.object), e.name); },
          [&](const ItemExpr& e) {
            Value object = eval(*e.object);
            return get_item(object, eval(*e.index));
          },
          [&](const SliceExpr& e) {
            Value object = eval(*e.object);
            Value start = e.start ? eval(*e.start) : Value();
            Value stop = e.stop ? eval(*e.stop) : Value();
            Value step = e.step ? eval(*e.step) : Value();
            if (object.is_list()) {
              const ValueList& list = object.as_list();
              ValueList items;
              for (std::size_t i :
                   slice_indices(static_cast<std::int64_t>(list.size()), start, stop, step)) {
                items.push_back(list[i]);
              }
              return Value::list(std::move(items));
            }
            if (object.is_string()) {
              const std::string& s = object.as_string();
              std::vector<std::size_t> offsets = text::code_point_offsets(s);
              std::string out;
              for (std::size_t i : slice_indices(static_cast<std::int64_t>(offsets.size() - 1),
                                                 start, stop, step)) {
                out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
              }
              return Value::string(std::move(out));
            }
            if (object.is_undefined()) return Value();
            fail("'" + std::string(type_name(object)) + "' object is not subscriptable");
          },
          [&](const CallExpr& e) { return eval_call(e); },
          [&](const FilterExpr& e) {
            Value operand = e.operand ? eval(*e.operand) : Value();
            return apply_filter(e.name, operand, eval_arguments(e.args));
          },
          [&](const TestExpr& e) {
            Value operand = eval(*e.operand);
            bool result = apply_test(e.name, operand, eval_arguments(e.args));
            return Value::boolean(result != e.negated);
          },
          [&](const UnaryExpr& e) {
            Value operand = eval(*e.operand);
            if (e.op == UnaryOp::kNot) return Value::boolean(!operand.truthy());
            if (operand.is_float()) {
              return Value::floating(e.op == UnaryOp::kNegate ? -operand.as_float()
                                                              : operand.as_float());
            }
            if (is_integral(operand)) {
              std::int64_t value = int_of(operand);
              if (e.op == UnaryOp::kPlus) return Value::integer(value);
              if (value == std::numeric_limits<std::int64_t>::min()) fail("integer overflow");
              return Value::integer(-value);
            }
            fail("bad operand type for unary " + std::string(e.op == UnaryOp::kNegate ? "-" : "+") +
                 ": '" + std::string(type_name(operand)) + "'");
          },
          [&](const BinaryExpr& e) { return eval_binary(e); },
          [&](const ConditionalExpr& e) {
            if (eval(*e.condition).truthy()) return eval(*e.then_value);
            return e.else_value ? eval(*e.else_value) : Value();
          },
      },
      expr.node);
}

Value Interpreter::eval_call(const CallExpr& call_expr) {
  if (const auto* attribute = std::get_if<AttributeExpr>(&call_expr.callee->node)) {
    Value object = eval(*attribute->object);
    if (has_method(object, attribute->name)) {
      Value result = call_method(*this, object, attribute->name, eval_arguments(call_expr.args));
      if (result.is_string()) charge_work(result.as_string().size());
      return result;
    }
    Value callee = get_attribute(object, attribute->name);
    if (!callee.is_callable()) {
      fail("'" + std::string(type_name(object)) + "' object has no callable attribute '" +
           attribute->name + "'");
    }
    return call(callee, eval_arguments(call_expr.args));
  }
  Value callee = eval(*call_expr.callee);
  if (!callee.is_callable()) {
    if (const auto* name = std::get_if<NameExpr>(&call_expr.callee->node)) {
      if (callee.is_undefined()) fail("'" + name->name + "' is undefined");
    }
    fail("'" + std::string(type_name(callee)) + "' object is not callable");
  }
  return call(callee, eval_arguments(call_expr.args));
}

Value Interpreter::call(const Value& callee, const CallArgs& args) {
  if (!callee.is_callable()) {
    fail("'" + std::string(type_name(callee)) + "' object is not callable");
  }
  if (const auto* macro = dynamic_cast<const MacroCallable*>(callee.as_callable().get())) {
    return invoke_macro(macro->definition(), args, Value());
  }
  Expected<Value> result = callee.as_callable()->call(args);
  if (!result) fail(result.error().message);
  if (result->is_string()) charge_work(result->as_string().size());
  return std::move(result).value();
}

Value Interpreter::eval_binary(const BinaryExpr& e) {
  if (e.op == BinaryOp::kAnd) {
    Value left = eval(*e.left);
    return left.truthy() ? eval(*e.right) : left;
  }
  if (e.op == BinaryOp::kOr) {
    Value left = eval(*e.left);
    return left.truthy() ? left : eval(*e.right);
  }
  Value a = eval(*e.left);
  Value b = eval(*e.right);
  switch (e.op) {
    case BinaryOp::kConcat: {
      std::string out = to_python_str(a);
      std::string right = to_python_str(b);
      check_size(out.size() + right.size(), "string");
      out += right;
      charge_work(out.size());
      return Value::string(std::move(out));
    }
    case BinaryOp::kEqual:
      return Value::boolean(values_equal(a, b));
    case BinaryOp::kNotEqual:
      return Value::boolean(!values_equal(a, b));
    case BinaryOp::kLess:
    case BinaryOp::kLessEqual:
    case BinaryOp::kGreater:
    case BinaryOp::kGreaterEqual: {
      std::optional<int> order = compare_values(a, b);
      if (!order) {
        fail("'" + binary_op_symbol(e.op) + "' not supported between '" +
             std::string(type_name(a)) + "' and '" + std::string(type_name(b)) + "'");
      }
      switch (e.op) {
        case BinaryOp::kLess:
          return Value::boolean(*order < 0);
        case BinaryOp::kLessEqual:
          return Value::boolean(*order <= 0);
        case BinaryOp::kGreater:
          return Value::boolean(*order > 0);
        default:
          return Value::boolean(*order >= 0);
      }
    }
    case BinaryOp::kIn:
      return Value::boolean(contains(b, a));
    case BinaryOp::kNotIn:
      return Value::boolean(!contains(b, a));
    default:
      break;
  }
  if (a.is_number() && b.is_number()) return arithmetic(e.op, a, b);
  if (e.op == BinaryOp::kAdd) {
    if (a.is_string() && b.is_string()) {
      check_size(a.as_string().size() + b.as_string().size(), "string");
      std::string out = a.as_string() + b.as_string();
      charge_work(out.size());
      return Value::string(std::move(out));
    }
    if (a.is_list() && b.is_list()) {
      check_size(a.as_list().size() + b.as_list().size(), "list");
      ValueList items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      charge_work(items.size() * sizeof(Value));
      return Value::list(std::move(items));
    }
  }
  if (e.op == BinaryOp::kMultiply) {
    const Value& sequence = is_integral(a) ? b : a;
    const Value& count_value = is_integral(a) ? a : b;
    if (is_integral(count_value) && (sequence.is_string() || sequence.is_list())) {
      std::int64_t count = std::max<std::int64_t>(0, int_of(count_value));
      std::size_t unit =
          sequence.is_string() ? sequence.as_string().size() : sequence.as_list().size();
      if (unit != 0 && static_cast<std::uint64_t>(count) > limits_.max_output_bytes / unit) {
        check_size(limits_.max_output_bytes + 1, sequence.is_string() ? "string" : "list");
      }
      auto times = static_cast<std::size_t>(count);
      if (sequence.is_string()) {
        std::string out;
        out.reserve(unit * times);
        for (std::size_t i = 0; i < times; ++i) out += sequence.as_string();
        charge_work(out.size());
        return Value::string(std::move(out));
      }
      ValueList items;
      for (std::size_t i = 0; i < times; ++i) {
        items.insert(items.end(), sequence.as_list().begin(), sequence.as_list().end());
      }
      charge_work(items.size() * sizeof(Value));
      return Value::list(std::move(items));
    }
  }
  unsupported(e.op, a, b);
}

Value Interpreter::get_attribute(const Value& object, std::string_view name) {
  if (object.is_dict() && !object.is_namespace() && has_method(object, name)) {
    return Value::function(
        std::string(name),
        [this, object, method = std::string(name)](const CallArgs& args) -> Expected<Value> {
          try {
            return call_method(*this, object, method, args);
          } catch (const TemplateError& error) {
            return Error{error.message()};
          }
        });
  }
  if (object.is_dict()) return object.item(name);
  if ((object.is_string() || object.is_list()) && has_method(object, name)) {
    return Value::function(
        std::string(name),
        [this, object, method = std::string(name)](const CallArgs& args) -> Expected<Value> {
          try {
            return call_method(*this, object, method, args);
          } catch (const TemplateError& error) {
            return Error{error.message()};
          }
        });
  }
  return Value();
}

Value Interpreter::get_item(const Value& object, const Value& index) {
  if (object.is_list() && is_integral(index)) {
    const ValueList& list = object.as_list();
    std::int64_t i = int_of(index);
    if (i < 0) i += static_cast<std::int64_t>(list.size());
    if (i < 0 || i >= static_cast<std::int64_t>(list.size())) return Value();
    return list[static_cast<std::size_t>(i)];
  }
  if (object.is_string() && is_integral(index)) {
    std::vector<std::size_t> offsets = text::code_point_offsets(object.as_string());
    auto count = static_cast<std::int64_t>(offsets.size() - 1);
    std::int64_t i = int_of(index);
    if (i < 0) i += count;
    if (i < 0 || i >= count) return Value();
    auto at = static_cast<std::size_t>(i);
    return Value::string(object.as_string().substr(offsets[at], offsets[at + 1] - offsets[at]));
  }
  if (object.is_dict()) {
    if (index.is_string()) {
      if (const Value* found = object.as_dict().find(index.as_string())) return *found;
      return get_attribute(object, index.as_string());
    }
    if (index.is_number()) return object.item(to_python_str(index));
    return Value();
  }
  if (index.is_string()) return get_attribute(object, index.as_string());
  return Value();
}

Value Interpreter::apply_filter(std::string_view name, const Value& operand, const CallArgs& args) {
  FilterFunction filter = find_filter(name);
  if (filter == nullptr) fail("unknown filter '" + std::string(name) + "'");
  Value result = filter(*this, operand, args);
  if (result.is_string()) charge_work(result.as_string().size());
  return result;
}

bool Interpreter::apply_test(std::string_view name, const Value& operand, const CallArgs& args) {
  TestFunction test = find_test(name);
  if (test == nullptr) fail("unknown test '" + std::string(name) + "'");
  return test(*this, operand, args);
}

}  // namespace tern::engine::chat
