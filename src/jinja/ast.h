// Jinja AST: expressions (Expr) and statements (Node) produced by
// parser.h and walked by eval.h. The parser bounds the depth of
// both trees, so recursive walks over them (evaluation, destruction) have
// bounded native stack use whatever the template source is.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace deepinfer::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // literal
    kName,     // name
    kList,     // [args...] (tuples too)
    kDict,     // {keys[i]: args[i]}
    kAttr,     // args[0].name
    kItem,     // args[0][args[1]]
    kSlice,    // args[0][args[1]:args[2]:args[3]], absent parts are null
    kCall,     // args[0](args[1..], kwargs)
    kFilter,   // args[0] | name(args[1..], kwargs)
    kTest,     // args[0] is [not] name(args[1..])
    kUnary,    // name in {"-", "+", "not"} applied to args[0]
    kBinary,   // args[0] name args[1]: + - * / // % ** ~ == != < <= > >= in "not in"
    kCompare,  // chained comparison: args[0] ops[0] args[1] ops[1] args[2] ...
    kAnd,      // args[0] and args[1] (short-circuit)
    kOr,       // args[0] or args[1]
    kCond,     // args[1] if args[0] else args[2] (args[2] may be null)
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  int column = 0;
  int depth = 1;         // height of this subtree
  bool negated = false;  // kTest: "is not"
  std::string name;
  Value literal;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<ExprPtr> keys;     // kDict
  std::vector<std::string> ops;  // kCompare
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct MacroNode {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // parallel to params; null when required
  Body body;
};

struct Node {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // if conds[i]: bodies[i] ... else else_body
    kFor,       // for targets in expr [if filter]: bodies[0] else else_body
    kSet,       // set targets[0][.attr] = expr
    kSetBlock,  // set targets[0] %}bodies[0]{% endset
    kMacro,     // macro definition
    kBreak,
    kContinue,
    kBlock,  // a transparent wrapper (generation blocks): bodies[0]
  };
  Kind kind = Kind::kText;
  int line = 0;
  int column = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::string> targets;
  std::string attr;  // kSet: "ns.attr" assignment when non-empty
  std::vector<ExprPtr> conds;
  std::vector<Body> bodies;
  Body else_body;
  std::unique_ptr<MacroNode> macro;
};

}  // namespace deepinfer::jinja
