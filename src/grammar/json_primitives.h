// Building blocks of JSON grammars, shared by the JSON Schema front end:
// strings (with length bounds, regex patterns, formats), numbers, integer
// ranges as digit patterns, and the "any JSON value" rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

// One character inside a JSON string literal: an unescaped code point other
// than '"', '\' and controls, or any JSON escape (\uXXXX counts as one).
ExprId JsonStringChar(Grammar* g);
// A JSON escape sequence: \["\\/bfnrt] or \uXXXX.
ExprId JsonEscape(Grammar* g);

// "..." with between min_len and max_len (nullopt: no limit) characters.
ExprId JsonString(Grammar* g, int64_t min_len, std::optional<int64_t> max_len);

// "..." with each character spelled one way (as nlohmann's dump writes it:
// short escapes where JSON has them, else \u00xx), so a complement taken on
// these spellings is a complement on decoded text.
ExprId JsonCanonicalString(Grammar* g);

// "..." whose decoded content matches `pattern` (ECMAScript, search
// semantics as in JSON Schema) with canonical escapes.
StatusOr<ExprId> JsonStringPattern(Grammar* g, const std::string& pattern);

// Regex of a supported `format` (full match of the string content), or
// nullopt if the format is not asserted (unknown formats are annotations).
std::optional<std::string> FormatRegex(const std::string& format);

// JSON number; integers: -?(0|[1-9][0-9]*).
ExprId JsonNumber(Grammar* g);
ExprId JsonInteger(Grammar* g);

// Integers in [lo, hi] (either side open) as a digit pattern. Bounds must
// fit in |x| < 1e18 (the caller checks).
ExprId IntegerRange(Grammar* g, std::optional<int64_t> lo, std::optional<int64_t> hi);

// Numbers >= 0 (strict: > 0), any fraction/exponent.
ExprId NonNegativeNumber(Grammar* g, bool strictly_positive);

// Numbers (no exponent) in an interval with integer bounds, |bound| <= 1e15
// (the caller checks); either side open; strict sides exclusive. Digits next
// to a strict bound are capped so the value also holds as a double.
ExprId NumberRange(Grammar* g, std::optional<int64_t> lo, bool lo_strict, std::optional<int64_t> hi,
                   bool hi_strict);

// Rules for any JSON value with whitespace expression `ws` between tokens.
// Returns the `value` rule (creates value/object/array/string/number rules).
RuleId AnyJsonValueRule(Grammar* g, ExprId ws);

}  // namespace deepinfer::grammar
