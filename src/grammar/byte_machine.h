// Small deterministic byte machines and their product, for languages the
// JSON Schema front end needs as intersections or differences (a pattern
// and a length bound, a string that is none of some values, an integer range
// that is a multiple of k, a decimal above a fractional bound).
//
// A machine reads bytes one at a time from Start(); Next returns kDead when
// no continuation can be accepted. Machines carry no syntax beyond what they
// need: a product pairs them with a syntax automaton. The product explores
// reachable state tuples breadth first and emits a Grammar ByteAutomaton;
// it is exact (no approximation), bounded by `max_states`.
//
// Thread-safety: machines are immutable after construction.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/automaton.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

class ByteMachine {
 public:
  static constexpr uint32_t kDead = 0xFFFFFFFFu;
  virtual ~ByteMachine() = default;
  virtual uint32_t Start() const = 0;
  virtual uint32_t Next(uint32_t state, uint8_t byte) const = 0;  // state != kDead
  virtual bool Final(uint32_t state) const = 0;                   // state != kDead
};

// The dense automaton of the one-rule grammar `make` builds. Null (no
// error) when the language is empty; kResourceExhausted when the rule is
// too large for dense tables.
StatusOr<std::unique_ptr<ByteMachine>> DenseMachine(const std::function<StatusOr<ExprId>(Grammar*)>& make,
                                                    const std::string& what);

// Quoted JSON strings (the bytes of "...") whose decoded length, counting a
// \uXXXX escape or a UTF-8 sequence as one character, is in [min_len,
// max_len] (nullopt: unbounded). Checks only what counting needs: pair it
// with a string automaton.
std::unique_ptr<ByteMachine> JsonLengthMachine(int64_t min_len, std::optional<int64_t> max_len);

// Spellings -?D+(.0+)? whose integer value is a multiple of `k` (k >= 1):
// a fraction is allowed only when all zeros. Leading zeros are not checked.
std::unique_ptr<ByteMachine> MultipleOfMachine(int64_t k);
// Spellings -?D+(.D+)? whose value is a multiple of k / 2^j (k >= 1,
// 0 <= j <= 6): x * 2^j / k is whole exactly when x * 10^j is a whole
// multiple of k * 5^j. (Divisors with a power-of-two denominator are the
// ones a validator dividing doubles checks exactly: x / (k / 2^j) has no
// rounding error when the quotient is whole.)
std::unique_ptr<ByteMachine> ScaledMultipleOfMachine(int64_t k, int j);

// A decimal bound: sign, integer digits without leading zeros ("0" for
// |b| < 1), fraction digits without trailing zeros.
struct Decimal {
  bool negative = false;
  std::string int_digits = "0";
  std::string frac_digits;
};
// The decimal of the shortest round-trip spelling of `v`; nullopt when it
// needs more than `max_significant` digits or |v| >= 1e15.
std::optional<Decimal> DecimalOf(double v, int max_significant);

// Spellings -?D+(.D+)? whose value x satisfies x >= b (lower) or x <= b
// (upper); strict: > and <. Syntax is not checked beyond the comparison.
std::unique_ptr<ByteMachine> DecimalBoundMachine(const Decimal& bound, bool lower, bool strict);

// -?(0|[1-9]D*)(.D+)? where a spelling with a fraction has at most 15
// significant digits and 300 fraction digits: such decimals convert to
// distinct doubles in the same order, so a validator that parses numbers
// as doubles compares them with a bound of <= 15 significant digits exactly
// as the decimal does.
std::unique_ptr<ByteMachine> DecimalSyntaxMachine();

struct ProductFactor {
  const ByteMachine* machine;
  bool required;  // true: must accept; false: must not accept (a difference)
};

// The strings every required factor accepts and no forbidden one does
// (at least one required factor). nullopt when that language is empty.
// kResourceExhausted above `max_states` product states.
StatusOr<std::optional<ByteAutomaton>> MachineProduct(const std::vector<ProductFactor>& factors,
                                                      size_t max_states);

}  // namespace deepinfer::grammar
