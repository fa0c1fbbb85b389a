#pragma once

// Walks a parsed template over a context and writes the output. One Interpreter serves one
// render: it owns the scopes, the output buffer and the counters that stop runaway templates
// (total loop iterations and macro calls, macro recursion, output and string sizes, and the bytes
// of strings built, which bounds the work a template can ask for).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/ast.h"
#include "engine/chat/template_error.h"
#include "engine/chat/value.h"

namespace tern::engine::chat {

struct RenderLimits {
  std::size_t max_output_bytes = std::size_t{16} << 20;  // also the largest string or list built
  std::uint64_t max_iterations = 1'000'000;  // loop iterations plus macro calls, per render
  int max_call_depth = 64;                   // nested macro calls
  int max_value_depth = 320;                 // nesting of lists and dicts stored in variables
  std::uint64_t max_work_bytes = std::uint64_t{1} << 30;  // bytes of strings built, per render
};

struct Scope;
struct MacroDefinition;
class MacroCallable;

class Interpreter {
 public:
  explicit Interpreter(RenderLimits limits);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Throws TemplateError. `context` is a dict whose entries become the template's variables.
  std::string render(const Program& program, const Value& context);

  // ---- for built-in filters, tests, methods and functions ----
  const RenderLimits& limits() const { return limits_; }
  // Throws when a string or list of this size would exceed the limits.
  void check_size(std::size_t size, std::string_view what) const;
  // Accounts for newly built data; throws past max_work_bytes.
  void charge_work(std::size_t bytes);
  // Accounts for one loop iteration or macro call; throws past max_iterations.
  void count_iteration();
  Value call(const Value& callee, const CallArgs& args);
  Value apply_filter(std::string_view name, const Value& operand, const CallArgs& args);
  bool apply_test(std::string_view name, const Value& operand, const CallArgs& args);
  // Jinja's getattr: a method of a str, list or dict, else a dict item, else undefined.
  Value get_attribute(const Value& object, std::string_view name);
  Value get_item(const Value& object, const Value& index);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  friend class MacroCallable;

  Flow exec_body(const Body& body);
  Flow exec(const Stmt& stmt);
  Flow exec_if(const IfStmt& stmt);
  Flow exec_for(const ForStmt& stmt);
  void exec_set(const SetStmt& stmt);
  void exec_call_block(const CallBlockStmt& stmt, SourcePosition position);
  std::string capture(const Body& body);
  Value apply_filter_chain(const std::vector<ExprPtr>& filters, Value value);

  Value eval(const Expr& expr);
  Value eval_node(const Expr& expr);
  Value eval_call(const CallExpr& call_expr);
  Value eval_binary(const BinaryExpr& binary);
  CallArgs eval_arguments(const Arguments& args);

  Value lookup(std::string_view name) const;
  void assign(std::string name, Value value);
  void write(std::string_view text);
  Value invoke_macro(const MacroDefinition& macro, const CallArgs& args, const Value& caller);
  Value make_macro(std::string name, const std::vector<MacroParam>& params, const Body& body);

  RenderLimits limits_;
  std::shared_ptr<Scope> scope_;
  ValueDict globals_;
  std::string* out_ = nullptr;
  std::uint64_t iterations_ = 0;
  std::uint64_t work_ = 0;
  int call_depth_ = 0;
  // Every macro made during the render. A macro holds the scope it was defined in, and that scope
  // holds the macro; the destructor cuts these cycles.
  std::vector<std::shared_ptr<MacroCallable>> macros_;
};

}  // namespace tern::engine::chat
