// Regex front end (ECMAScript / JSON Schema `pattern` subset) -> IR.
//
// Supported: literals (UTF-8), '.', classes [...] with ranges and negation,
// escapes \d \D \w \W \s \S \n \r \t \f \v \0 \xHH \uHHHH (incl. surrogate
// pairs) \u{H...} \cX and identity escapes, groups ( ) (?: ) (?<name> ),
// alternation, quantifiers * + ? {n} {n,} {n,m} (lazy forms match the same
// language, so they are treated as greedy), anchors ^ and $ at the start /
// end of a top-level alternative.
// Refused with kUnimplemented naming the construct: backreferences,
// lookaround, word boundaries \b \B, Unicode property escapes \p{..}, inline
// flags (?i), anchors elsewhere.
//
// No recursion on the pattern: groups use an explicit stack (depth capped).
#pragma once

#include <string_view>

#include "core/status.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

struct RegexOptions {
  // Full match (the whole output is the regex) or search (JSON Schema
  // `pattern`: unanchored sides may have any text before/after).
  bool search = false;
  // Emit characters as they appear inside a JSON string literal (escaped).
  bool json_string_content = false;
  int max_group_depth = 1000;
  int max_repeat = 100000;  // largest {n,m} bound accepted
};

// Adds the pattern's expression to `g`. Errors name the offending position.
StatusOr<ExprId> ParseRegex(std::string_view pattern, const RegexOptions& options, Grammar* g);

// Grammar whose root matches exactly the strings the regex matches in full.
StatusOr<Grammar> RegexToGrammar(std::string_view pattern);

}  // namespace deepinfer::grammar
