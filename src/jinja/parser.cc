#include "jinja/parser.h"

#include <algorithm>

#include "jinja/builtins.h"

namespace deepinfer::jinja {
namespace {

// Names that end an expression or belong to the grammar, never variables.
bool IsReserved(const std::string& s) {
  return s == "and" || s == "or" || s == "not" || s == "in" || s == "is" || s == "if" || s == "else";
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const ParseLimits& limits) : t_(tokens), limits_(limits) {}

  StatusOr<Body> ParseTemplate() {
    Body body;
    std::string end;
    DI_RETURN_IF_ERROR(ParseBody({}, &body, &end));
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& Peek(size_t ahead = 0) const { return t_[std::min(pos_ + ahead, t_.size() - 1)]; }
  const Token& Next() {
    const Token& t = Peek();
    if (pos_ < t_.size() - 1) ++pos_;
    return t;
  }
  bool IsOp(const char* op, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kOp && Peek(ahead).value == op;
  }
  bool IsName(const char* name, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kName && Peek(ahead).value == name;
  }
  bool SkipOp(const char* op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(const char* name) {
    if (!IsName(name)) return false;
    Next();
    return true;
  }
  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::kText:
        return "template text";
      case TokenKind::kVarBegin:
        return "'{{'";
      case TokenKind::kVarEnd:
        return "'}}'";
      case TokenKind::kBlockBegin:
        return "'{%'";
      case TokenKind::kBlockEnd:
        return "'%}'";
      case TokenKind::kName:
        return "'" + t.value + "'";
      case TokenKind::kString:
        return "a string";
      case TokenKind::kInt:
      case TokenKind::kFloat:
        return "a number";
      case TokenKind::kOp:
        return "'" + t.value + "'";
      case TokenKind::kEof:
        return "end of template";
    }
    return "?";
  }
  Status ErrorAt(const Token& t, const std::string& what) const {
    return InvalidArgument("chat template line " + std::to_string(t.line) + ":" + std::to_string(t.column) +
                           ": " + what);
  }
  Status Unexpected(const std::string& expected) const {
    return ErrorAt(Peek(), "expected " + expected + ", got " + Describe(Peek()));
  }
  Status ExpectOp(const char* op) {
    if (!SkipOp(op)) return Unexpected(std::string("'") + op + "'");
    return Status::Ok();
  }
  Status ExpectBlockEnd() {
    if (Peek().kind != TokenKind::kBlockEnd) return Unexpected("'%}'");
    Next();
    return Status::Ok();
  }
  StatusOr<std::string> ExpectIdentifier() {
    if (Peek().kind != TokenKind::kName || IsReserved(Peek().value)) return Unexpected("a name");
    return Next().value;
  }

  // ---- expression nodes ----
  ExprPtr NewExpr(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  // Computes the subtree height and enforces the limit (evaluation recurses on it).
  StatusOr<ExprPtr> Seal(ExprPtr e) {
    int depth = 0;
    for (const auto& a : e->args) depth = std::max(depth, a ? a->depth : 0);
    for (const auto& k : e->keys) depth = std::max(depth, k ? k->depth : 0);
    for (const auto& kw : e->kwargs) depth = std::max(depth, kw.second->depth);
    e->depth = depth + 1;
    if (e->depth > limits_.max_expr_depth) {
      return InvalidArgument("chat template line " + std::to_string(e->line) + ":" +
                             std::to_string(e->column) + ": expression nested too deeply (limit " +
                             std::to_string(limits_.max_expr_depth) + ")");
    }
    return e;
  }
  StatusOr<ExprPtr> Binary(const Token& at, Expr::Kind kind, std::string op, ExprPtr a, ExprPtr b) {
    ExprPtr e = NewExpr(kind, at);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return Seal(std::move(e));
  }

  // Guards native recursion (parentheses, unary chains, nested literals).
  struct DepthGuard {
    explicit DepthGuard(int* d) : d_(d) { ++*d_; }
    ~DepthGuard() { --*d_; }
    int* d_;
  };
  Status CheckNesting() const {
    if (nesting_ > limits_.max_expr_depth) {
      return ErrorAt(Peek(),
                     "expression nested too deeply (limit " + std::to_string(limits_.max_expr_depth) + ")");
    }
    return Status::Ok();
  }

  StatusOr<ExprPtr> ParseExpression(bool with_condexpr = true) {
    DepthGuard guard(&nesting_);
    DI_RETURN_IF_ERROR(CheckNesting());
    DI_ASSIGN_OR_RETURN(ExprPtr left, ParseOr());
    while (with_condexpr && IsName("if")) {
      const Token& at = Next();
      ExprPtr e = NewExpr(Expr::Kind::kCond, at);
      DI_ASSIGN_OR_RETURN(ExprPtr cond, ParseOr());
      ExprPtr otherwise;
      if (SkipName("else")) {
        DI_ASSIGN_OR_RETURN(otherwise, ParseExpression());
      }
      e->args.push_back(std::move(cond));
      e->args.push_back(std::move(left));
      e->args.push_back(std::move(otherwise));
      DI_ASSIGN_OR_RETURN(left, Seal(std::move(e)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseOr() {
    DI_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
    while (IsName("or")) {
      const Token& at = Next();
      DI_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
      DI_ASSIGN_OR_RETURN(left, Binary(at, Expr::Kind::kOr, "or", std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseAnd() {
    DI_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
    while (IsName("and")) {
      const Token& at = Next();
      DI_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
      DI_ASSIGN_OR_RETURN(left, Binary(at, Expr::Kind::kAnd, "and", std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseNot() {
    if (IsName("not")) {
      DepthGuard guard(&nesting_);
      DI_RETURN_IF_ERROR(CheckNesting());
      const Token& at = Next();
      ExprPtr e = NewExpr(Expr::Kind::kUnary, at);
      e->name = "not";
      DI_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
      e->args.push_back(std::move(operand));
      return Seal(std::move(e));
    }
    return ParseCompare();
  }

  // "a < b < c" means "a < b and b < c" (b evaluated once), as in Python.
  StatusOr<ExprPtr> ParseCompare() {
    DI_ASSIGN_OR_RETURN(ExprPtr left, ParseMath1());
    ExprPtr chain;
    while (true) {
      std::string op;
      const Token& at = Peek();
      if (at.kind == TokenKind::kOp && (at.value == "==" || at.value == "!=" || at.value == "<" ||
                                        at.value == "<=" || at.value == ">" || at.value == ">=")) {
        op = at.value;
        Next();
      } else if (IsName("in")) {
        op = "in";
        Next();
      } else if (IsName("not") && IsName("in", 1)) {
        op = "not in";
        Next();
        Next();
      } else {
        if (!chain) return left;
        chain->args.push_back(std::move(left));
        return Seal(std::move(chain));
      }
      if (!chain) chain = NewExpr(Expr::Kind::kCompare, at);
      chain->args.push_back(std::move(left));
      chain->ops.push_back(op);
      DI_ASSIGN_OR_RETURN(left, ParseMath1());
    }
  }

  StatusOr<ExprPtr> ParseMath1() {
    DI_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
    while (IsOp("+") || IsOp("-")) {
      const Token& at = Next();
      DI_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
      DI_ASSIGN_OR_RETURN(left, Binary(at, Expr::Kind::kBinary, at.value, std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseConcat() {
    DI_ASSIGN_OR_RETURN(ExprPtr left, ParseMath2());
    while (IsOp("~")) {
      const Token& at = Next();
      DI_ASSIGN_OR_RETURN(ExprPtr right, ParseMath2());
      DI_ASSIGN_OR_RETURN(left, Binary(at, Expr::Kind::kBinary, "~", std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseMath2() {
    DI_ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Token& at = Next();
      DI_ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
      DI_ASSIGN_OR_RETURN(left, Binary(at, Expr::Kind::kBinary, at.value, std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParsePow() {
    DI_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
    while (IsOp("**")) {
      const Token& at = Next();
      DI_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
      DI_ASSIGN_OR_RETURN(left, Binary(at, Expr::Kind::kBinary, "**", std::move(left), std::move(right)));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseUnary(bool with_filter) {
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      DepthGuard guard(&nesting_);
      DI_RETURN_IF_ERROR(CheckNesting());
      const Token& at = Next();
      ExprPtr e = NewExpr(Expr::Kind::kUnary, at);
      e->name = at.value;
      DI_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(false));
      e->args.push_back(std::move(operand));
      DI_ASSIGN_OR_RETURN(node, Seal(std::move(e)));
    } else {
      DI_ASSIGN_OR_RETURN(node, ParsePrimary());
      DI_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
    }
    if (with_filter) return ParseFilters(std::move(node));
    return node;
  }

  StatusOr<ExprPtr> ParsePrimary() {
    const Token& at = Peek();
    switch (at.kind) {
      case TokenKind::kName: {
        Next();
        const std::string& n = at.value;
        ExprPtr e = NewExpr(Expr::Kind::kLiteral, at);
        if (n == "true" || n == "True") {
          e->literal = Value::Bool(true);
        } else if (n == "false" || n == "False") {
          e->literal = Value::Bool(false);
        } else if (n == "none" || n == "None") {
          e->literal = Value::None();
        } else if (IsReserved(n)) {
          return ErrorAt(at, "unexpected '" + n + "'");
        } else {
          e->kind = Expr::Kind::kName;
          e->name = n;
        }
        return Seal(std::move(e));
      }
      case TokenKind::kString: {
        // Adjacent string literals concatenate, as in Python.
        std::string s;
        while (Peek().kind == TokenKind::kString) s += Next().value;
        ExprPtr e = NewExpr(Expr::Kind::kLiteral, at);
        e->literal = Value::String(std::move(s));
        return Seal(std::move(e));
      }
      case TokenKind::kInt:
      case TokenKind::kFloat: {
        Next();
        ExprPtr e = NewExpr(Expr::Kind::kLiteral, at);
        e->literal = at.kind == TokenKind::kInt ? Value::Int(at.int_value) : Value::Float(at.float_value);
        return Seal(std::move(e));
      }
      case TokenKind::kOp:
        if (at.value == "(") return ParseParenthesized();
        if (at.value == "[") return ParseListLiteral();
        if (at.value == "{") return ParseDictLiteral();
        break;
      default:
        break;
    }
    return Unexpected("an expression");
  }

  StatusOr<ExprPtr> ParseParenthesized() {
    const Token& at = Next();  // (
    if (SkipOp(")")) {
      ExprPtr e = NewExpr(Expr::Kind::kList, at);  // () is an empty tuple
      return Seal(std::move(e));
    }
    DI_ASSIGN_OR_RETURN(ExprPtr first, ParseExpression());
    if (SkipOp(")")) return first;
    // A tuple; evaluated as a list.
    ExprPtr e = NewExpr(Expr::Kind::kList, at);
    e->args.push_back(std::move(first));
    while (SkipOp(",")) {
      if (IsOp(")")) break;
      DI_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
      e->args.push_back(std::move(item));
    }
    DI_RETURN_IF_ERROR(ExpectOp(")"));
    return Seal(std::move(e));
  }

  StatusOr<ExprPtr> ParseListLiteral() {
    const Token& at = Next();  // [
    ExprPtr e = NewExpr(Expr::Kind::kList, at);
    while (!IsOp("]")) {
      if (!e->args.empty()) DI_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp("]")) break;
      DI_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression());
      e->args.push_back(std::move(item));
    }
    Next();
    return Seal(std::move(e));
  }

  StatusOr<ExprPtr> ParseDictLiteral() {
    const Token& at = Next();  // {
    ExprPtr e = NewExpr(Expr::Kind::kDict, at);
    while (!IsOp("}")) {
      if (!e->keys.empty()) DI_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp("}")) break;
      DI_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression());
      DI_RETURN_IF_ERROR(ExpectOp(":"));
      DI_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
      e->keys.push_back(std::move(key));
      e->args.push_back(std::move(value));
    }
    Next();
    return Seal(std::move(e));
  }

  StatusOr<ExprPtr> ParsePostfix(ExprPtr node) {
    while (true) {
      const Token& at = Peek();
      if (IsOp(".")) {
        Next();
        if (Peek().kind == TokenKind::kInt) {  // x.0 is x[0]
          ExprPtr e = NewExpr(Expr::Kind::kItem, at);
          ExprPtr index = NewExpr(Expr::Kind::kLiteral, Peek());
          index->literal = Value::Int(Next().int_value);
          e->args.push_back(std::move(node));
          e->args.push_back(std::move(index));
          DI_ASSIGN_OR_RETURN(node, Seal(std::move(e)));
          continue;
        }
        if (Peek().kind != TokenKind::kName) return Unexpected("an attribute name");
        ExprPtr e = NewExpr(Expr::Kind::kAttr, at);
        e->name = Next().value;
        e->args.push_back(std::move(node));
        DI_ASSIGN_OR_RETURN(node, Seal(std::move(e)));
      } else if (IsOp("[")) {
        Next();
        DI_ASSIGN_OR_RETURN(node, ParseSubscript(at, std::move(node)));
      } else if (IsOp("(")) {
        ExprPtr e = NewExpr(Expr::Kind::kCall, at);
        e->args.push_back(std::move(node));
        DI_RETURN_IF_ERROR(ParseCallArgs(e.get()));
        DI_ASSIGN_OR_RETURN(node, Seal(std::move(e)));
      } else {
        return node;
      }
    }
  }

  // After '[': an index or a slice [start:stop:step] with optional parts.
  StatusOr<ExprPtr> ParseSubscript(const Token& at, ExprPtr node) {
    DepthGuard guard(&nesting_);
    DI_RETURN_IF_ERROR(CheckNesting());
    ExprPtr parts[3];
    int colons = 0;
    if (!IsOp(":")) {
      DI_ASSIGN_OR_RETURN(parts[0], ParseExpression());
    }
    while (colons < 2 && SkipOp(":")) {
      ++colons;
      if (!IsOp(":") && !IsOp("]")) {
        DI_ASSIGN_OR_RETURN(parts[colons], ParseExpression());
      }
    }
    DI_RETURN_IF_ERROR(ExpectOp("]"));
    if (colons == 0) {
      if (!parts[0]) return ErrorAt(at, "empty subscript");
      ExprPtr e = NewExpr(Expr::Kind::kItem, at);
      e->args.push_back(std::move(node));
      e->args.push_back(std::move(parts[0]));
      return Seal(std::move(e));
    }
    ExprPtr e = NewExpr(Expr::Kind::kSlice, at);
    e->args.push_back(std::move(node));
    for (auto& p : parts) e->args.push_back(std::move(p));
    return Seal(std::move(e));
  }

  // '(' args, name=kwargs ')' appended to e->args / e->kwargs.
  Status ParseCallArgs(Expr* e) {
    DepthGuard guard(&nesting_);
    DI_RETURN_IF_ERROR(CheckNesting());
    DI_RETURN_IF_ERROR(ExpectOp("("));
    bool first = true;
    while (!IsOp(")")) {
      if (!first) DI_RETURN_IF_ERROR(ExpectOp(","));
      first = false;
      if (IsOp(")")) break;
      if (Peek().kind == TokenKind::kName && IsOp("=", 1)) {
        std::string key = Next().value;
        Next();
        DI_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        e->kwargs.emplace_back(std::move(key), std::move(value));
      } else {
        if (!e->kwargs.empty()) return ErrorAt(Peek(), "positional argument after keyword argument");
        DI_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression());
        e->args.push_back(std::move(value));
      }
    }
    Next();
    return Status::Ok();
  }

  StatusOr<ExprPtr> ParseFilters(ExprPtr node) {
    while (true) {
      const Token& at = Peek();
      if (IsOp("|")) {
        Next();
        if (Peek().kind != TokenKind::kName) return Unexpected("a filter name");
        ExprPtr e = NewExpr(Expr::Kind::kFilter, at);
        if (!IsKnownFilter(Peek().value)) return ErrorAt(Peek(), "unknown filter '" + Peek().value + "'");
        e->name = Next().value;
        e->args.push_back(std::move(node));
        if (IsOp("(")) DI_RETURN_IF_ERROR(ParseCallArgs(e.get()));
        DI_ASSIGN_OR_RETURN(node, Seal(std::move(e)));
      } else if (IsName("is")) {
        Next();
        ExprPtr e = NewExpr(Expr::Kind::kTest, at);
        e->negated = SkipName("not");
        if (Peek().kind != TokenKind::kName) return Unexpected("a test name");
        if (!IsKnownTest(Peek().value)) return ErrorAt(Peek(), "unknown test '" + Peek().value + "'");
        e->name = Next().value;
        e->args.push_back(std::move(node));
        if (IsOp("(")) {
          DI_RETURN_IF_ERROR(ParseCallArgs(e.get()));
        } else if (Peek().kind == TokenKind::kString || Peek().kind == TokenKind::kInt ||
                   Peek().kind == TokenKind::kFloat ||
                   (Peek().kind == TokenKind::kName && !IsReserved(Peek().value))) {
          // "x is divisibleby 3": one argument without parentheses.
          DI_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
          e->args.push_back(std::move(arg));
        }
        DI_ASSIGN_OR_RETURN(node, Seal(std::move(e)));
      } else {
        return node;
      }
    }
  }

  // ---- statements ----
  Node* NewNode(Body* body, Node::Kind kind, const Token& at) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->line = at.line;
    n->column = at.column;
    body->push_back(std::move(n));
    return body->back().get();
  }

  // Parses nodes until a block tag whose keyword is in `ends`; that keyword
  // is consumed and stored in *end (the rest of the tag is the caller's).
  Status ParseBody(const std::vector<std::string>& ends, Body* body, std::string* end) {
    while (true) {
      const Token& at = Peek();
      switch (at.kind) {
        case TokenKind::kText:
          NewNode(body, Node::Kind::kText, at)->text = Next().value;
          break;
        case TokenKind::kVarBegin: {
          Next();
          DI_ASSIGN_OR_RETURN(ExprPtr e, ParseExpression());
          if (Peek().kind != TokenKind::kVarEnd) return Unexpected("'}}'");
          Next();
          NewNode(body, Node::Kind::kOutput, at)->expr = std::move(e);
          break;
        }
        case TokenKind::kBlockBegin: {
          Next();
          const Token& kw = Peek();
          if (kw.kind != TokenKind::kName) return Unexpected("a statement name");
          if (std::find(ends.begin(), ends.end(), kw.value) != ends.end()) {
            *end = Next().value;
            return Status::Ok();
          }
          DI_RETURN_IF_ERROR(ParseStatement(body, ends));
          break;
        }
        case TokenKind::kEof:
          if (!ends.empty()) {
            return ErrorAt(at, "unexpected end of template, expected '{% " + ends.back() + " %}'");
          }
          return Status::Ok();
        default:
          return Unexpected("template text or a tag");
      }
    }
  }

  Status ParseStatement(Body* body, const std::vector<std::string>& enclosing_ends) {
    const Token& kw = Next();
    const std::string& k = kw.value;
    if (k == "break" || k == "continue") {
      if (loop_depth_ == 0) return ErrorAt(kw, "'" + k + "' outside a for loop");
      NewNode(body, k == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, kw);
      return ExpectBlockEnd();
    }
    if (k != "if" && k != "for" && k != "set" && k != "macro" && k != "generation") {
      const bool stray_end = k.rfind("end", 0) == 0 || k == "elif" || k == "else";
      if (stray_end) {
        std::string where = enclosing_ends.empty() ? "" : " (expected '" + enclosing_ends.back() + "')";
        return ErrorAt(kw, "unexpected '{% " + k + " %}'" + where);
      }
      return ErrorAt(kw, "unsupported tag '" + k + "'");
    }
    if (++block_depth_ > limits_.max_block_depth) {
      return ErrorAt(kw, "blocks nested too deeply (limit " + std::to_string(limits_.max_block_depth) + ")");
    }
    Status s = k == "if"      ? ParseIf(body, kw)
               : k == "for"   ? ParseFor(body, kw)
               : k == "set"   ? ParseSet(body, kw)
               : k == "macro" ? ParseMacro(body, kw)
                              : ParseGeneration(body, kw);
    --block_depth_;
    return s;
  }

  Status ParseIf(Body* body, const Token& at) {
    Node* n = NewNode(body, Node::Kind::kIf, at);
    while (true) {
      DI_ASSIGN_OR_RETURN(ExprPtr cond, ParseExpression());
      DI_RETURN_IF_ERROR(ExpectBlockEnd());
      n->conds.push_back(std::move(cond));
      n->bodies.emplace_back();
      std::string end;
      DI_RETURN_IF_ERROR(ParseBody({"elif", "else", "endif"}, &n->bodies.back(), &end));
      if (end == "elif") continue;
      if (end == "else") {
        DI_RETURN_IF_ERROR(ExpectBlockEnd());
        DI_RETURN_IF_ERROR(ParseBody({"endif"}, &n->else_body, &end));
      }
      return ExpectBlockEnd();
    }
  }

  Status ParseFor(Body* body, const Token& at) {
    Node* n = NewNode(body, Node::Kind::kFor, at);
    const bool paren = SkipOp("(");
    do {
      DI_ASSIGN_OR_RETURN(std::string target, ExpectIdentifier());
      n->targets.push_back(std::move(target));
    } while (SkipOp(","));
    if (paren) DI_RETURN_IF_ERROR(ExpectOp(")"));
    if (!SkipName("in")) return Unexpected("'in'");
    DI_ASSIGN_OR_RETURN(n->expr, ParseExpression(/*with_condexpr=*/false));
    if (SkipName("if")) {
      DI_ASSIGN_OR_RETURN(n->filter, ParseExpression());
    }
    if (IsName("recursive")) return ErrorAt(Peek(), "recursive for loops are not supported");
    DI_RETURN_IF_ERROR(ExpectBlockEnd());
    n->bodies.emplace_back();
    std::string end;
    ++loop_depth_;
    Status s = ParseBody({"else", "endfor"}, &n->bodies.back(), &end);
    --loop_depth_;
    DI_RETURN_IF_ERROR(s);
    if (end == "else") {
      DI_RETURN_IF_ERROR(ExpectBlockEnd());
      DI_RETURN_IF_ERROR(ParseBody({"endfor"}, &n->else_body, &end));
    }
    return ExpectBlockEnd();
  }

  Status ParseSet(Body* body, const Token& at) {
    DI_ASSIGN_OR_RETURN(std::string target, ExpectIdentifier());
    std::string attr;
    if (SkipOp(".")) {
      if (Peek().kind != TokenKind::kName) return Unexpected("an attribute name");
      attr = Next().value;
    }
    if (IsOp(",")) return ErrorAt(Peek(), "multiple assignment targets are not supported");
    if (Peek().kind == TokenKind::kBlockEnd && attr.empty()) {  // {% set x %}...{% endset %}
      Next();
      Node* n = NewNode(body, Node::Kind::kSetBlock, at);
      n->targets.push_back(std::move(target));
      n->bodies.emplace_back();
      std::string end;
      DI_RETURN_IF_ERROR(ParseBody({"endset"}, &n->bodies.back(), &end));
      return ExpectBlockEnd();
    }
    DI_RETURN_IF_ERROR(ExpectOp("="));
    Node* n = NewNode(body, Node::Kind::kSet, at);
    n->targets.push_back(std::move(target));
    n->attr = std::move(attr);
    DI_ASSIGN_OR_RETURN(n->expr, ParseExpression());
    return ExpectBlockEnd();
  }

  Status ParseMacro(Body* body, const Token& at) {
    Node* n = NewNode(body, Node::Kind::kMacro, at);
    n->macro = std::make_unique<MacroNode>();
    DI_ASSIGN_OR_RETURN(n->macro->name, ExpectIdentifier());
    DI_RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(")")) {
      if (!n->macro->params.empty()) DI_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp(")")) break;
      DI_ASSIGN_OR_RETURN(std::string param, ExpectIdentifier());
      ExprPtr def;
      if (SkipOp("=")) {
        DI_ASSIGN_OR_RETURN(def, ParseExpression());
      } else if (!n->macro->defaults.empty() && n->macro->defaults.back()) {
        return ErrorAt(Peek(), "parameter without default after one with a default");
      }
      n->macro->params.push_back(std::move(param));
      n->macro->defaults.push_back(std::move(def));
    }
    Next();
    DI_RETURN_IF_ERROR(ExpectBlockEnd());
    // Loop controls do not reach through a macro body.
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    std::string end;
    Status s = ParseBody({"endmacro"}, &n->macro->body, &end);
    loop_depth_ = saved_loops;
    DI_RETURN_IF_ERROR(s);
    if (Peek().kind == TokenKind::kName) Next();  // {% endmacro name %}
    return ExpectBlockEnd();
  }

  // Hugging Face's {% generation %} marks assistant text for training masks;
  // for rendering it is transparent.
  Status ParseGeneration(Body* body, const Token& at) {
    DI_RETURN_IF_ERROR(ExpectBlockEnd());
    Node* n = NewNode(body, Node::Kind::kBlock, at);
    n->bodies.emplace_back();
    std::string end;
    DI_RETURN_IF_ERROR(ParseBody({"endgeneration"}, &n->bodies.back(), &end));
    return ExpectBlockEnd();
  }

  const std::vector<Token>& t_;
  const ParseLimits limits_;
  size_t pos_ = 0;
  int nesting_ = 0;
  int block_depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

StatusOr<Body> Parse(const std::vector<Token>& tokens, const ParseLimits& limits) {
  if (tokens.empty() || tokens.back().kind != TokenKind::kEof) {
    return InvalidArgument("chat template: no tokens");
  }
  Parser parser(tokens, limits);
  return parser.ParseTemplate();
}

}  // namespace deepinfer::jinja
