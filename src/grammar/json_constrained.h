// JSON strings and numbers under several assertions at once, built as exact
// products of byte machines (byte_machine.h): a pattern or format together
// with length bounds, strings that are none of some values or match none of
// some patterns, integers that are multiples of k within a range, numbers
// between fractional or exclusive bounds.
//
// Numbers built here are spelled without exponent, and a spelling with a
// fraction has at most 15 significant digits (so validators that parse
// numbers as doubles agree with the decimal comparison; see
// DecimalSyntaxMachine). Errors: kResourceExhausted when the product is too
// large; pattern syntax errors as the regex front end reports them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/byte_machine.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

struct StringConstraints {
  int64_t min_len = 0;
  std::optional<int64_t> max_len;
  std::vector<std::string> patterns;      // each must match (search semantics)
  std::vector<std::string> not_patterns;  // none may match
  std::vector<std::string> not_values;    // decoded values excluded
};

// "..." satisfying every constraint; Nothing when none does.
StatusOr<ExprId> ConstrainedJsonString(Grammar* g, const StringConstraints& c);

struct IntegerConstraints {
  std::optional<int64_t> lo, hi;  // inclusive
  int64_t multiple_of = 1;
  std::vector<int64_t> excluded;
};
StatusOr<ExprId> ConstrainedJsonInteger(Grammar* g, const IntegerConstraints& c);

struct NumberConstraints {
  std::optional<Decimal> lo, hi;
  bool lo_strict = false, hi_strict = false;
  int64_t multiple_of = 0;    // 0: none; else a multiple of multiple_of / 2^multiple_of_scale
  int multiple_of_scale = 0;  // 0..6
  bool non_integral = false;  // exclude whole values (not {type: integer})
  std::vector<Decimal> excluded;
};
StatusOr<ExprId> ConstrainedJsonNumber(Grammar* g, const NumberConstraints& c);

}  // namespace deepinfer::grammar
