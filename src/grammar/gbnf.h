// GBNF front end (llama.cpp's grammar dialect) -> IR.
//
//   root ::= "{" ws pair ("," ws pair)* "}"     # comments
//   pair ::= string ":" value
//   char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
//
// Rules `name ::= alternatives`; literals "..." with escapes \n \r \t \\ \"
// \xHH \uHHHH \UHHHHHHHH; classes [...] (ranges, ^ negation, same escapes);
// '.' any character; groups ( ); postfix * + ? {m} {m,} {m,n}; newlines end
// a rule except inside parentheses or after '|'. The root rule is `root`.
// Errors name the line and column. No recursion on the text (explicit stack).
#pragma once

#include <string_view>

#include "core/status.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

StatusOr<Grammar> GbnfToGrammar(std::string_view text);

}  // namespace deepinfer::grammar
