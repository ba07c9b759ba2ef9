// Lark-like EBNF front end -> IR (a subset of Lark's grammar language).
//
//   start: pair ("," pair)*          // `start` is the root
//   pair: KEY "=" value
//   ?value: NUMBER | ESCAPED_STRING | "[" [value ("," value)*] "]"
//   KEY: /[a-z_]+/
//   %import common.NUMBER
//   %import common (ESCAPED_STRING, WS)
//
// Rules and terminals `name: alternatives` (modifiers ?/! and priorities
// .N are accepted and ignored; `-> alias` is ignored); lines starting with
// '|' continue the previous definition. Items: "literal" (`i` flag refused),
// "a".."z" ranges, /regex/ (ECMAScript subset, regex.h; flags refused),
// names, ( ), [ ] (optional), postfix ? * + and ~n / ~n..m.
// `%import common.X` provides Lark's common terminals (DIGIT, INT, NUMBER,
// SIGNED_NUMBER, FLOAT, WORD, CNAME, ESCAPED_STRING, WS, WS_INLINE, NEWLINE,
// LETTER, ...). Refused (kUnimplemented): %ignore (whitespace skipping
// between tokens), %declare, %override, imports from other modules.
// Comments: // to end of line. No recursion on the text (explicit stack).
#pragma once

#include <string_view>

#include "core/status.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

StatusOr<Grammar> LarkToGrammar(std::string_view text);

}  // namespace deepinfer::grammar
