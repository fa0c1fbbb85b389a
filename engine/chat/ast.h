#pragma once

// The syntax tree of a template: expressions and statements, each with the source position that
// errors report. Trees are built once by the parser and only read by the interpreter, so one
// compiled template serves concurrent renders.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/chat/template_error.h"
#include "engine/chat/value.h"

namespace tern::engine::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct KeywordArg {
  std::string name;
  ExprPtr value;
};

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<KeywordArg> keyword;
};

struct LiteralExpr {
  Value value;
};
struct NameExpr {
  std::string name;
};
struct ListExpr {
  std::vector<ExprPtr> items;  // lists and tuples alike
};
struct DictExpr {
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
};
struct AttributeExpr {
  ExprPtr object;
  std::string name;
};
struct ItemExpr {
  ExprPtr object;
  ExprPtr index;
};
struct SliceExpr {
  ExprPtr object;
  ExprPtr start;  // each may be null
  ExprPtr stop;
  ExprPtr step;
};
struct CallExpr {
  ExprPtr callee;
  Arguments args;
};
struct FilterExpr {
  ExprPtr operand;  // null in a {% filter %} block, whose body is the operand
  std::string name;
  Arguments args;
};
struct TestExpr {
  ExprPtr operand;
  std::string name;
  Arguments args;
  bool negated = false;
};
enum class UnaryOp { kNot, kNegate, kPlus };
struct UnaryExpr {
  UnaryOp op;
  ExprPtr operand;
};
enum class BinaryOp {
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kFloorDivide,
  kModulo,
  kPower,
  kConcat,
  kEqual,
  kNotEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  kIn,
  kNotIn,
  kAnd,
  kOr,
};
struct BinaryExpr {
  BinaryOp op;
  ExprPtr left;
  ExprPtr right;
};
struct ConditionalExpr {
  ExprPtr condition;
  ExprPtr then_value;
  ExprPtr else_value;  // null: undefined when the condition is false
};

struct Expr {
  SourcePosition position;
  int depth = 1;  // height of this subtree; the parser caps it so evaluation cannot overflow
  std::variant<LiteralExpr, NameExpr, ListExpr, DictExpr, AttributeExpr, ItemExpr, SliceExpr,
               CallExpr, FilterExpr, TestExpr, UnaryExpr, BinaryExpr, ConditionalExpr>
      node;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct TextStmt {
  std::string text;
};
struct OutputStmt {
  ExprPtr value;
};
struct IfStmt {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if and elifs
  Body else_body;
};
struct ForStmt {
  std::vector<std::string> targets;  // more than one: unpack each item
  ExprPtr iterable;
  ExprPtr filter;  // `for x in xs if cond`; may be null
  Body body;
  Body else_body;
};
// `set x = ...`, `set a, b = ...`, `set ns.attr = ...`
struct SetStmt {
  std::vector<std::string> targets;
  std::string attribute;  // non-empty: assign targets[0].attribute
  ExprPtr value;
};
// `{% set x %}...{% endset %}`, optionally through filters (`{% set x | upper %}`).
struct SetBlockStmt {
  std::string target;
  std::vector<ExprPtr> filters;  // FilterExprs with null operands
  Body body;
};
struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};
struct MacroStmt {
  std::string name;
  std::vector<MacroParam> params;
  Body body;
};
// `{% call(params) macro(args) %}body{% endcall %}`: the body becomes the macro's caller().
struct CallBlockStmt {
  ExprPtr call;
  std::vector<MacroParam> caller_params;
  Body body;
};
struct FilterBlockStmt {
  std::vector<ExprPtr> filters;
  Body body;
};
struct DoStmt {
  ExprPtr value;
};
struct BreakStmt {};
struct ContinueStmt {};

struct Stmt {
  SourcePosition position;
  std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, SetBlockStmt, MacroStmt,
               CallBlockStmt, FilterBlockStmt, DoStmt, BreakStmt, ContinueStmt>
      node;
};

struct Program {
  Body body;
};

}  // namespace tern::engine::chat
