#include "engine/chat/parser.h"

#include <algorithm>
#include <initializer_list>

#include "engine/chat/lexer.h"

namespace tern::engine::chat {

namespace {

// Recursion of the parser itself (parentheses, unary chains, nested blocks).
constexpr int kMaxNesting = 100;
// Height of one expression tree: left-leaning chains such as `a + a + a ...` are built in a loop
// but evaluated recursively.
constexpr int kMaxExpressionDepth = 256;

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

int height(const ExprPtr& expr) {
  return expr ? expr->depth : 0;
}
int height(const Arguments& args) {
  int h = 0;
  for (const auto& arg : args.positional) h = std::max(h, height(arg));
  for (const auto& arg : args.keyword) h = std::max(h, height(arg.value));
  return h;
}

int children_height(const Expr& expr) {
  return std::visit(
      Overloaded{
          [](const LiteralExpr&) { return 0; },
          [](const NameExpr&) { return 0; },
          [](const ListExpr& e) {
            int h = 0;
            for (const auto& item : e.items) h = std::max(h, height(item));
            return h;
          },
          [](const DictExpr& e) {
            int h = 0;
            for (const auto& [key, value] : e.entries) {
              h = std::max({h, height(key), height(value)});
            }
            return h;
          },
          [](const AttributeExpr& e) { return height(e.object); },
          [](const ItemExpr& e) { return std::max(height(e.object), height(e.index)); },
          [](const SliceExpr& e) {
            return std::max({height(e.object), height(e.start), height(e.stop), height(e.step)});
          },
          [](const CallExpr& e) { return std::max(height(e.callee), height(e.args)); },
          [](const FilterExpr& e) { return std::max(height(e.operand), height(e.args)); },
          [](const TestExpr& e) { return std::max(height(e.operand), height(e.args)); },
          [](const UnaryExpr& e) { return height(e.operand); },
          [](const BinaryExpr& e) { return std::max(height(e.left), height(e.right)); },
          [](const ConditionalExpr& e) {
            return std::max({height(e.condition), height(e.then_value), height(e.else_value)});
          },
      },
      expr.node);
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  std::unique_ptr<Program> run() {
    auto program = std::make_unique<Program>();
    program->body = parse_body({}, nullptr);
    return program;
  }

 private:
  // Counts recursion for the parser's own stack.
  class NestingGuard {
   public:
    explicit NestingGuard(Parser& parser) : parser_(parser) {
      if (++parser_.nesting_ > kMaxNesting) {
        parser_.fail("template nested too deeply (more than " + std::to_string(kMaxNesting) +
                     " levels)");
      }
    }
    ~NestingGuard() { --parser_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    Parser& parser_;
  };

  struct OpenBlock {
    std::string_view name;
    SourcePosition position;
  };

  const Token& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& token = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return token;
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw TemplateError(message, peek().position);
  }

  static std::string describe(const Token& token) {
    switch (token.kind) {
      case TokenKind::kText:
        return "text";
      case TokenKind::kVariableBegin:
        return "'{{'";
      case TokenKind::kVariableEnd:
        return "'}}'";
      case TokenKind::kBlockBegin:
        return "'{%'";
      case TokenKind::kBlockEnd:
        return "'%}'";
      case TokenKind::kName:
      case TokenKind::kInteger:
      case TokenKind::kFloat:
      case TokenKind::kOperator:
        return "'" + token.text + "'";
      case TokenKind::kString:
        return "string literal";
      case TokenKind::kEnd:
        return "end of template";
    }
    return "token";
  }

  bool at_operator(std::string_view op, std::size_t ahead = 0) const {
    const Token& token = peek(ahead);
    return token.kind == TokenKind::kOperator && token.text == op;
  }
  bool at_name(std::string_view name, std::size_t ahead = 0) const {
    const Token& token = peek(ahead);
    return token.kind == TokenKind::kName && token.text == name;
  }
  bool skip_operator(std::string_view op) {
    if (!at_operator(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!at_name(name)) return false;
    next();
    return true;
  }
  void expect_operator(std::string_view op) {
    if (!skip_operator(op)) {
      fail("expected '" + std::string(op) + "', found " + describe(peek()));
    }
  }
  std::string expect_name(std::string_view what) {
    if (peek().kind != TokenKind::kName) {
      fail("expected " + std::string(what) + ", found " + describe(peek()));
    }
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != TokenKind::kBlockEnd) {
      fail("expected '%}', found " + describe(peek()));
    }
    next();
  }

  template <typename Node>
  ExprPtr make(SourcePosition position, Node node) {
    auto expr = std::make_unique<Expr>();
    expr->position = position;
    expr->node = std::move(node);
    expr->depth = children_height(*expr) + 1;
    if (expr->depth > kMaxExpressionDepth) {
      throw TemplateError(
          "expression nested too deeply (more than " + std::to_string(kMaxExpressionDepth) + ")",
          position);
    }
    return expr;
  }

  template <typename Node>
  static StmtPtr make_stmt(SourcePosition position, Node node) {
    auto stmt = std::make_unique<Stmt>();
    stmt->position = position;
    stmt->node = std::move(node);
    return stmt;
  }

  // Statements until a block tag named in `stops`; leaves the parser on that tag's name.
  Body parse_body(std::initializer_list<std::string_view> stops, const OpenBlock* open) {
    NestingGuard guard(*this);
    Body body;
    while (true) {
      const Token& token = peek();
      switch (token.kind) {
        case TokenKind::kEnd:
          if (open != nullptr) {
            throw TemplateError("unexpected end of template: '" + std::string(open->name) +
                                    "' block was never closed (expected '" +
                                    std::string(*std::prev(stops.end())) + "')",
                                open->position);
          }
          return body;
        case TokenKind::kText:
          body.push_back(make_stmt(token.position, TextStmt{token.text}));
          next();
          break;
        case TokenKind::kVariableBegin: {
          SourcePosition position = next().position;
          ExprPtr value = parse_tuple();
          if (peek().kind != TokenKind::kVariableEnd) {
            fail("expected '}}', found " + describe(peek()));
          }
          next();
          body.push_back(make_stmt(position, OutputStmt{std::move(value)}));
          break;
        }
        case TokenKind::kBlockBegin: {
          const Token& name = peek(1);
          if (name.kind == TokenKind::kName &&
              std::find(stops.begin(), stops.end(), name.text) != stops.end()) {
            next();
            return body;
          }
          SourcePosition position = next().position;
          parse_statement(position, body);
          break;
        }
        default:
          fail("unexpected " + describe(token));
      }
    }
  }

  void parse_statement(SourcePosition position, Body& body) {
    if (peek().kind != TokenKind::kName)
      fail("expected a statement name, found " + describe(peek()));
    const std::string name = next().text;
    if (name == "if") {
      body.push_back(parse_if(position));
    } else if (name == "for") {
      body.push_back(parse_for(position));
    } else if (name == "set") {
      body.push_back(parse_set(position));
    } else if (name == "macro") {
      body.push_back(parse_macro(position));
    } else if (name == "call") {
      body.push_back(parse_call_block(position));
    } else if (name == "filter") {
      FilterBlockStmt block;
      block.filters = parse_filter_chain();
      expect_block_end();
      OpenBlock open{"filter", position};
      block.body = parse_body({"endfilter"}, &open);
      close_block();
      body.push_back(make_stmt(position, std::move(block)));
    } else if (name == "do") {
      ExprPtr value = parse_tuple();
      expect_block_end();
      body.push_back(make_stmt(position, DoStmt{std::move(value)}));
    } else if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) {
        throw TemplateError("'" + name + "' outside of a for loop", position);
      }
      expect_block_end();
      if (name == "break") {
        body.push_back(make_stmt(position, BreakStmt{}));
      } else {
        body.push_back(make_stmt(position, ContinueStmt{}));
      }
    } else if (name == "generation") {
      // transformers' assistant-mask markers: they render nothing of their own.
      expect_block_end();
      OpenBlock open{"generation", position};
      Body inner = parse_body({"endgeneration"}, &open);
      close_block();
      for (auto& stmt : inner) body.push_back(std::move(stmt));
    } else if (name == "include" || name == "extends" || name == "import" || name == "from" ||
               name == "block") {
      throw TemplateError("'" + name + "' is not supported in chat templates", position);
    } else if (name.starts_with("end") || name == "elif" || name == "else") {
      throw TemplateError("unexpected '" + name + "'", position);
    } else {
      throw TemplateError("unknown statement '" + name + "'", position);
    }
  }

  // Consumes the end tag's name (the parser stands on it) and the closing '%}'.
  void close_block() {
    next();
    expect_block_end();
  }

  StmtPtr parse_if(SourcePosition position) {
    IfStmt stmt;
    ExprPtr condition = parse_expression();
    expect_block_end();
    OpenBlock open{"if", position};
    while (true) {
      Body branch = parse_body({"elif", "else", "endif"}, &open);
      stmt.branches.emplace_back(std::move(condition), std::move(branch));
      const std::string keyword = next().text;
      if (keyword == "elif") {
        condition = parse_expression();
        expect_block_end();
        continue;
      }
      expect_block_end();
      if (keyword == "else") {
        stmt.else_body = parse_body({"endif"}, &open);
        close_block();
      }
      break;
    }
    return make_stmt(position, std::move(stmt));
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> targets;
    bool parenthesized = skip_operator("(");
    do {
      targets.push_back(expect_name("a loop variable name"));
    } while (skip_operator(","));
    if (parenthesized) expect_operator(")");
    return targets;
  }

  StmtPtr parse_for(SourcePosition position) {
    ForStmt stmt;
    stmt.targets = parse_targets();
    if (!skip_name("in")) fail("expected 'in', found " + describe(peek()));
    stmt.iterable = parse_tuple(/*allow_conditional=*/false);
    if (skip_name("if")) stmt.filter = parse_expression(/*allow_conditional=*/false);
    if (at_name("recursive")) fail("recursive for loops are not supported");
    expect_block_end();
    OpenBlock open{"for", position};
    ++loop_depth_;
    stmt.body = parse_body({"else", "endfor"}, &open);
    --loop_depth_;
    if (next().text == "else") {
      expect_block_end();
      stmt.else_body = parse_body({"endfor"}, &open);
      next();
    }
    expect_block_end();
    return make_stmt(position, std::move(stmt));
  }

  StmtPtr parse_set(SourcePosition position) {
    std::string first = expect_name("a variable name");
    if (skip_operator(".")) {
      SetStmt stmt;
      stmt.targets.push_back(std::move(first));
      stmt.attribute = expect_name("an attribute name");
      expect_operator("=");
      stmt.value = parse_tuple();
      expect_block_end();
      return make_stmt(position, std::move(stmt));
    }
    if (at_operator("=") || at_operator(",")) {
      SetStmt stmt;
      stmt.targets.push_back(std::move(first));
      while (skip_operator(",")) stmt.targets.push_back(expect_name("a variable name"));
      expect_operator("=");
      stmt.value = parse_tuple();
      expect_block_end();
      return make_stmt(position, std::move(stmt));
    }
    SetBlockStmt block;
    block.target = std::move(first);
    if (at_operator("|")) block.filters = parse_filter_chain();
    expect_block_end();
    OpenBlock open{"set", position};
    block.body = parse_body({"endset"}, &open);
    close_block();
    return make_stmt(position, std::move(block));
  }

  std::vector<MacroParam> parse_params() {
    std::vector<MacroParam> params;
    expect_operator("(");
    while (!at_operator(")")) {
      MacroParam param;
      param.name = expect_name("a parameter name");
      if (skip_operator("=")) param.default_value = parse_expression();
      params.push_back(std::move(param));
      if (!skip_operator(",")) break;
    }
    expect_operator(")");
    return params;
  }

  StmtPtr parse_macro(SourcePosition position) {
    MacroStmt stmt;
    stmt.name = expect_name("a macro name");
    stmt.params = parse_params();
    expect_block_end();
    OpenBlock open{"macro", position};
    stmt.body = parse_body({"endmacro"}, &open);
    next();
    if (peek().kind == TokenKind::kName) next();  // `{% endmacro name %}`
    expect_block_end();
    return make_stmt(position, std::move(stmt));
  }

  StmtPtr parse_call_block(SourcePosition position) {
    CallBlockStmt stmt;
    if (at_operator("(")) stmt.caller_params = parse_params();
    stmt.call = parse_expression();
    if (!std::holds_alternative<CallExpr>(stmt.call->node)) {
      throw TemplateError("'call' needs a macro call, as in {% call macro() %}", position);
    }
    expect_block_end();
    OpenBlock open{"call", position};
    stmt.body = parse_body({"endcall"}, &open);
    close_block();
    return make_stmt(position, std::move(stmt));
  }

  // `name(args) | name ...` as in {% filter %} and {% set x | f %}; operands are filled in later.
  std::vector<ExprPtr> parse_filter_chain() {
    std::vector<ExprPtr> filters;
    skip_operator("|");
    do {
      filters.push_back(parse_filter(nullptr));
    } while (skip_operator("|"));
    return filters;
  }

  // ---- expressions ----

  // An expression, or several separated by commas, which make a tuple (a list here).
  ExprPtr parse_tuple(bool allow_conditional = true) {
    SourcePosition position = peek().position;
    ExprPtr first = parse_expression(allow_conditional);
    if (!at_operator(",")) return first;
    ListExpr tuple;
    tuple.items.push_back(std::move(first));
    while (skip_operator(",")) {
      if (!starts_expression()) break;
      tuple.items.push_back(parse_expression(allow_conditional));
    }
    return make(position, std::move(tuple));
  }

  bool starts_expression() const {
    const Token& token = peek();
    switch (token.kind) {
      case TokenKind::kName:
      case TokenKind::kString:
      case TokenKind::kInteger:
      case TokenKind::kFloat:
        return true;
      case TokenKind::kOperator:
        return token.text == "(" || token.text == "[" || token.text == "{" || token.text == "-" ||
               token.text == "+";
      default:
        return false;
    }
  }

  ExprPtr parse_expression(bool allow_conditional = true) {
    NestingGuard guard(*this);
    SourcePosition position = peek().position;
    ExprPtr value = parse_or();
    while (allow_conditional && skip_name("if")) {
      ConditionalExpr conditional;
      conditional.condition = parse_or();
      if (skip_name("else")) conditional.else_value = parse_expression();
      conditional.then_value = std::move(value);
      value = make(position, std::move(conditional));
    }
    return value;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (at_name("or")) {
      SourcePosition position = next().position;
      left = make(position, BinaryExpr{BinaryOp::kOr, std::move(left), parse_and()});
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (at_name("and")) {
      SourcePosition position = next().position;
      left = make(position, BinaryExpr{BinaryOp::kAnd, std::move(left), parse_not()});
    }
    return left;
  }

  ExprPtr parse_not() {
    if (at_name("not")) {
      NestingGuard guard(*this);
      SourcePosition position = next().position;
      return make(position, UnaryExpr{UnaryOp::kNot, parse_not()});
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr left = parse_math1();
    while (true) {
      const Token& token = peek();
      std::optional<BinaryOp> op;
      if (token.kind == TokenKind::kOperator) {
        if (token.text == "==") op = BinaryOp::kEqual;
        if (token.text == "!=") op = BinaryOp::kNotEqual;
        if (token.text == "<") op = BinaryOp::kLess;
        if (token.text == "<=") op = BinaryOp::kLessEqual;
        if (token.text == ">") op = BinaryOp::kGreater;
        if (token.text == ">=") op = BinaryOp::kGreaterEqual;
      } else if (at_name("in")) {
        op = BinaryOp::kIn;
      } else if (at_name("not") && at_name("in", 1)) {
        op = BinaryOp::kNotIn;
        next();
      }
      if (!op) return left;
      SourcePosition position = next().position;
      left = make(position, BinaryExpr{*op, std::move(left), parse_math1()});
    }
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (at_operator("+") || at_operator("-")) {
      const Token& token = next();
      BinaryOp op = token.text == "+" ? BinaryOp::kAdd : BinaryOp::kSubtract;
      left = make(token.position, BinaryExpr{op, std::move(left), parse_concat()});
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (at_operator("~")) {
      SourcePosition position = next().position;
      left = make(position, BinaryExpr{BinaryOp::kConcat, std::move(left), parse_math2()});
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (at_operator("*") || at_operator("/") || at_operator("//") || at_operator("%")) {
      const Token& token = next();
      BinaryOp op = token.text == "*"    ? BinaryOp::kMultiply
                    : token.text == "/"  ? BinaryOp::kDivide
                    : token.text == "//" ? BinaryOp::kFloorDivide
                                         : BinaryOp::kModulo;
      left = make(token.position, BinaryExpr{op, std::move(left), parse_pow()});
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary();
    while (at_operator("**")) {
      SourcePosition position = next().position;
      left = make(position, BinaryExpr{BinaryOp::kPower, std::move(left), parse_unary()});
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filters = true) {
    NestingGuard guard(*this);
    ExprPtr value;
    if (at_operator("-") || at_operator("+")) {
      const Token& token = next();
      UnaryOp op = token.text == "-" ? UnaryOp::kNegate : UnaryOp::kPlus;
      value = make(token.position, UnaryExpr{op, parse_unary(false)});
    } else {
      value = parse_primary();
    }
    value = parse_postfix(std::move(value));
    if (with_filters) value = parse_filters_and_tests(std::move(value));
    return value;
  }

  ExprPtr parse_primary() {
    const Token& token = peek();
    SourcePosition position = token.position;
    switch (token.kind) {
      case TokenKind::kName: {
        std::string name = next().text;
        if (name == "true" || name == "True")
          return make(position, LiteralExpr{Value::boolean(true)});
        if (name == "false" || name == "False") {
          return make(position, LiteralExpr{Value::boolean(false)});
        }
        if (name == "none" || name == "None") return make(position, LiteralExpr{Value::none()});
        return make(position, NameExpr{std::move(name)});
      }
      case TokenKind::kString: {
        std::string text;
        while (peek().kind == TokenKind::kString) text += next().text;
        return make(position, LiteralExpr{Value::string(std::move(text))});
      }
      case TokenKind::kInteger:
        return make(position, LiteralExpr{Value::integer(next().integer)});
      case TokenKind::kFloat:
        return make(position, LiteralExpr{Value::floating(next().floating)});
      case TokenKind::kOperator:
        if (token.text == "(") return parse_parenthesized();
        if (token.text == "[") return parse_list();
        if (token.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail("unexpected " + describe(token) + " in expression");
  }

  ExprPtr parse_parenthesized() {
    SourcePosition position = next().position;
    if (skip_operator(")")) return make(position, ListExpr{});
    ExprPtr first = parse_expression();
    if (!at_operator(",")) {
      expect_operator(")");
      return first;
    }
    ListExpr tuple;
    tuple.items.push_back(std::move(first));
    while (skip_operator(",")) {
      if (at_operator(")")) break;
      tuple.items.push_back(parse_expression());
    }
    expect_operator(")");
    return make(position, std::move(tuple));
  }

  ExprPtr parse_list() {
    SourcePosition position = next().position;
    ListExpr list;
    while (!at_operator("]")) {
      list.items.push_back(parse_expression());
      if (!skip_operator(",")) break;
    }
    expect_operator("]");
    return make(position, std::move(list));
  }

  ExprPtr parse_dict() {
    SourcePosition position = next().position;
    DictExpr dict;
    while (!at_operator("}")) {
      ExprPtr key = parse_expression();
      expect_operator(":");
      ExprPtr value = parse_expression();
      dict.entries.emplace_back(std::move(key), std::move(value));
      if (!skip_operator(",")) break;
    }
    expect_operator("}");
    return make(position, std::move(dict));
  }

  ExprPtr parse_postfix(ExprPtr value) {
    const SourcePosition chain_start = value->position;
    while (true) {
      if (at_operator(".")) {
        SourcePosition position = next().position;
        if (peek().kind == TokenKind::kInteger) {
          auto index = make(peek().position, LiteralExpr{Value::integer(next().integer)});
          value = make(position, ItemExpr{std::move(value), std::move(index)});
        } else {
          std::string name = expect_name("an attribute name after '.'");
          value = make(position, AttributeExpr{std::move(value), std::move(name)});
        }
      } else if (at_operator("[")) {
        value = parse_subscript(std::move(value));
      } else if (at_operator("(")) {
        // A call reports where its callee starts: `raise_exception(...)`, not its parenthesis.
        SourcePosition position = chain_start;
        Arguments args = parse_arguments();
        value = make(position, CallExpr{std::move(value), std::move(args)});
      } else {
        return value;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr object) {
    SourcePosition position = next().position;
    ExprPtr start;
    if (!at_operator(":")) {
      start = parse_expression();
      if (!at_operator(":")) {
        expect_operator("]");
        return make(position, ItemExpr{std::move(object), std::move(start)});
      }
    }
    SliceExpr slice;
    slice.object = std::move(object);
    slice.start = std::move(start);
    expect_operator(":");
    if (!at_operator("]") && !at_operator(":")) slice.stop = parse_expression();
    if (skip_operator(":") && !at_operator("]")) slice.step = parse_expression();
    expect_operator("]");
    return make(position, std::move(slice));
  }

  Arguments parse_arguments() {
    expect_operator("(");
    Arguments args;
    while (!at_operator(")")) {
      if (at_operator("*") || at_operator("**")) fail("*args and **kwargs are not supported");
      if (peek().kind == TokenKind::kName && at_operator("=", 1)) {
        std::string name = next().text;
        next();
        args.keyword.push_back({std::move(name), parse_expression()});
      } else {
        if (!args.keyword.empty()) fail("positional argument follows keyword argument");
        args.positional.push_back(parse_expression());
      }
      if (!skip_operator(",")) break;
    }
    expect_operator(")");
    return args;
  }

  ExprPtr parse_filters_and_tests(ExprPtr value) {
    while (true) {
      if (at_operator("|")) {
        next();
        value = parse_filter(std::move(value));
      } else if (at_name("is")) {
        value = parse_test(std::move(value));
      } else if (at_operator("(")) {
        SourcePosition position = peek().position;
        Arguments args = parse_arguments();
        value = make(position, CallExpr{std::move(value), std::move(args)});
      } else {
        return value;
      }
    }
  }

  ExprPtr parse_filter(ExprPtr operand) {
    SourcePosition position = peek().position;
    FilterExpr filter;
    filter.name = expect_name("a filter name");
    while (at_operator(".") && peek(1).kind == TokenKind::kName) {
      next();
      filter.name += "." + next().text;
    }
    if (at_operator("(")) filter.args = parse_arguments();
    filter.operand = std::move(operand);
    return make(position, std::move(filter));
  }

  ExprPtr parse_test(ExprPtr operand) {
    SourcePosition position = next().position;
    TestExpr test;
    test.negated = skip_name("not");
    test.name = expect_name("a test name after 'is'");
    if (at_operator("(")) {
      test.args = parse_arguments();
    } else if (starts_test_argument()) {
      test.args.positional.push_back(parse_postfix(parse_primary()));
    }
    test.operand = std::move(operand);
    return make(position, std::move(test));
  }

  // `x is divisibleby 3`: a test may take one argument without parentheses.
  bool starts_test_argument() const {
    const Token& token = peek();
    if (token.kind == TokenKind::kName) {
      static constexpr std::string_view kStops[] = {"else", "or", "and", "if", "is", "in", "not"};
      return std::find(std::begin(kStops), std::end(kStops), token.text) == std::end(kStops);
    }
    return token.kind == TokenKind::kString || token.kind == TokenKind::kInteger ||
           token.kind == TokenKind::kFloat || at_operator("[") || at_operator("{");
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int nesting_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

std::unique_ptr<Program> parse_template(std::string_view source) {
  return Parser(tokenize(source)).run();
}

}  // namespace tern::engine::chat
