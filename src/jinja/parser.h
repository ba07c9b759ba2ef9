// Jinja parser: token stream (lexer.h) -> statement list (ast.h).
// Recursive descent with Jinja2's operator precedence, lowest first:
//   x if c else y | or | and | not | comparisons, in, not in | + - | ~ |
//   * / // % | ** | unary -, + | primary with .attr [item] [a:b:c] (call)
//   followed by | filter and "is" test.
// Supported statements: if/elif/else, for (targets, inline if, else,
// break/continue), set (name, ns.attr, block set), macro, raw, generation.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace deepinfer::jinja {

struct ParseLimits {
  int max_expr_depth = 96;   // height of one expression tree
  int max_block_depth = 32;  // nesting of if/for/macro/set blocks
};

// InvalidArgument "chat template line L:C: ..." on a syntax error or an
// unsupported construct (e.g. {% include %}), or when a limit is exceeded.
StatusOr<Body> Parse(const std::vector<Token>& tokens, const ParseLimits& limits = {});

}  // namespace deepinfer::jinja
