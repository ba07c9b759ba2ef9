#include "grammar/byte_machine.h"

#include <charconv>
#include <cmath>
#include <deque>
#include <map>

namespace deepinfer::grammar {

namespace {

class DenseRuleMachine : public ByteMachine {
 public:
  explicit DenseRuleMachine(GrammarAutomaton a) : a_(std::move(a)) {}
  uint32_t Start() const override { return a_.rule_start[a_.root]; }
  uint32_t Next(uint32_t s, uint8_t b) const override {
    uint32_t n = a_.DenseNext(s, b);
    return n == kNoState ? kDead : n;
  }
  bool Final(uint32_t s) const override { return a_.is_final[s] != 0; }

 private:
  GrammarAutomaton a_;
};

// State = count * kSubs + sub; sub is where the reader is inside the string.
class LengthMachine : public ByteMachine {
 public:
  LengthMachine(int64_t min_len, std::optional<int64_t> max_len) : min_(min_len), max_(max_len) {}
  uint32_t Start() const override { return kBeforeQuote; }
  uint32_t Next(uint32_t s, uint8_t b) const override {
    uint32_t sub = s % kSubs;
    int64_t count = s / kSubs;
    auto at = [&](int64_t c, uint32_t next_sub) { return static_cast<uint32_t>(c * kSubs + next_sub); };
    auto complete = [&]() -> uint32_t {
      int64_t c = count + 1;
      if (max_ && c > *max_) return kDead;
      if (!max_ && c > min_) c = min_;  // saturates: only ">= min" matters
      return at(c, kBoundary);
    };
    switch (sub) {
      case kBeforeQuote:
        return b == '"' ? at(count, kBoundary) : kDead;
      case kBoundary:
        if (b == '"') return at(count, kClosed);
        if (b == '\\') return at(count, kEscape);
        if (b < 0x80) return complete();
        if (b >= 0xC0 && b <= 0xDF) return at(count, kCont1);
        if (b >= 0xE0 && b <= 0xEF) return at(count, kCont2);
        if (b >= 0xF0 && b <= 0xF7) return at(count, kCont3);
        return kDead;
      case kCont1:
        return complete();
      case kCont2:
        return at(count, kCont1);
      case kCont3:
        return at(count, kCont2);
      case kEscape:
        return b == 'u' ? at(count, kHex4) : complete();
      case kHex4:
      case kHex3:
      case kHex2:
        return at(count, sub + 1);
      case kHex1:
        return complete();
      default:
        return kDead;  // closed: nothing may follow
    }
  }
  bool Final(uint32_t s) const override {
    return s % kSubs == kClosed && static_cast<int64_t>(s / kSubs) >= min_;
  }

 private:
  enum Sub : uint32_t {
    kBeforeQuote,
    kBoundary,
    kCont1,
    kCont2,
    kCont3,
    kEscape,
    kHex4,
    kHex3,
    kHex2,
    kHex1,
    kClosed,
    kSubs
  };
  int64_t min_;
  std::optional<int64_t> max_;
};

// The value scaled by 10^j (j = scale_digits) modulo `modulus`: the
// integer digits, then up to j fraction digits, enter the remainder; later
// fraction digits must be 0; a shorter fraction is padded at the end.
// State = (remainder * (j + 2) + fraction digits read + 1), 0 before any
// fraction (digits read = -1 encoded as 0).
class ModuloMachine : public ByteMachine {
 public:
  ModuloMachine(int64_t modulus, int scale_digits) : m_(modulus), j_(scale_digits) {}
  uint32_t Start() const override { return 0; }
  uint32_t Next(uint32_t s, uint8_t b) const override {
    const int64_t width = j_ + 2;
    int64_t r = s / width;
    int64_t read = static_cast<int64_t>(s % width) - 1;  // -1: no '.' yet
    auto at = [&](int64_t rem, int64_t rd) { return static_cast<uint32_t>(rem * width + rd + 1); };
    if (b == '-' && s == 0) return 0;
    if (b == '.') return read < 0 ? at(r, 0) : kDead;
    if (b < '0' || b > '9') return kDead;
    if (read >= j_) return b == '0' ? s : kDead;
    int64_t next = (r * 10 + (b - '0')) % m_;
    return at(next, read < 0 ? -1 : read + 1);
  }
  bool Final(uint32_t s) const override {
    const int64_t width = j_ + 2;
    int64_t r = s / width;
    int64_t read = std::max<int64_t>(0, static_cast<int64_t>(s % width) - 1);
    for (int64_t pad = read; pad < j_; ++pad) r = r * 10 % m_;
    return r == 0;
  }

 private:
  int64_t m_;
  int j_;
};

enum Cmp : uint32_t { kLess, kEqual, kGreater };

// State fields: phase (0 sign/start, 1 integer digits, 2 fraction), negative,
// nonzero (a non-zero digit was read), cmp (magnitude vs the bound so far),
// pos (integer digits read, capped; or fraction digits compared).
class BoundMachine : public ByteMachine {
 public:
  BoundMachine(Decimal b, bool lower, bool strict) : b_(std::move(b)), lower_(lower), strict_(strict) {}
  uint32_t Start() const override { return Pack({0, false, false, kEqual, 0}); }
  uint32_t Next(uint32_t s, uint8_t c) const override {
    Fields f = Unpack(s);
    const size_t int_len = b_.int_digits.size();
    if (c == '-') {
      if (f.phase != 0 || f.negative) return kDead;
      f.negative = true;
      return Pack(f);
    }
    if (c == '.') {
      if (f.phase != 1) return kDead;
      f.cmp = IntegerCmp(f);
      f.phase = 2;
      f.pos = 0;
      return Pack(f);
    }
    if (c < '0' || c > '9') return kDead;
    f.nonzero |= c != '0';
    if (f.phase == 2) {
      if (f.cmp == kEqual) {
        auto bd = static_cast<uint8_t>(f.pos < b_.frac_digits.size() ? b_.frac_digits[f.pos] : '0');
        if (c != bd) f.cmp = c < bd ? kLess : kGreater;
        if (f.cmp == kEqual) {
          f.pos = std::min<uint32_t>(f.pos + 1, static_cast<uint32_t>(b_.frac_digits.size()));
        }
      }
      return Pack(f);
    }
    f.phase = 1;
    if (f.pos < int_len && f.cmp == kEqual) {
      auto bd = static_cast<uint8_t>(b_.int_digits[f.pos]);
      if (c != bd) f.cmp = c < bd ? kLess : kGreater;
    }
    f.pos = std::min<uint32_t>(f.pos + 1, static_cast<uint32_t>(int_len + 1));
    return Pack(f);
  }
  bool Final(uint32_t s) const override {
    Fields f = Unpack(s);
    if (f.phase == 0) return false;
    Cmp magnitude = f.phase == 1 ? IntegerCmp(f) : f.cmp;
    if (f.phase == 1 && magnitude == kEqual && !b_.frac_digits.empty()) magnitude = kLess;
    if (f.phase == 2 && magnitude == kEqual && f.pos < b_.frac_digits.size()) magnitude = kLess;
    bool b_zero = b_.int_digits == "0" && b_.frac_digits.empty();
    Cmp signed_cmp;
    if (!f.nonzero) {
      signed_cmp = b_zero ? kEqual : (b_.negative ? kGreater : kLess);
    } else if (!f.negative) {
      signed_cmp = b_.negative || b_zero ? kGreater : magnitude;
    } else {
      signed_cmp = !b_.negative ? kLess : static_cast<Cmp>(2 - magnitude);
    }
    if (signed_cmp == kEqual) return !strict_;
    return lower_ ? signed_cmp == kGreater : signed_cmp == kLess;
  }

 private:
  struct Fields {
    uint32_t phase;
    bool negative;
    bool nonzero;
    Cmp cmp;
    uint32_t pos;
  };
  // Magnitude of the integer part read so far vs the bound's integer part.
  Cmp IntegerCmp(const Fields& f) const {
    const size_t int_len = b_.int_digits.size();
    if (f.pos < int_len) return kLess;
    if (f.pos > int_len) return kGreater;
    if (f.cmp != kEqual) return f.cmp;
    return kEqual;
  }
  static uint32_t Pack(const Fields& f) {
    return (((f.pos * 3 + f.cmp) * 2 + f.nonzero) * 2 + f.negative) * 3 + f.phase;
  }
  static Fields Unpack(uint32_t s) {
    Fields f;
    f.phase = s % 3;
    s /= 3;
    f.negative = s % 2;
    s /= 2;
    f.nonzero = s % 2;
    s /= 2;
    f.cmp = static_cast<Cmp>(s % 3);
    f.pos = s / 3;
    return f;
  }
  Decimal b_;
  bool lower_;
  bool strict_;
};

// State = phase + 4 * (significant digits, capped at 16) + 64 * (leading
// fraction zeros while no significant digit, capped at 301).
class SyntaxMachine : public ByteMachine {
 public:
  uint32_t Start() const override { return kStart; }
  uint32_t Next(uint32_t s, uint8_t c) const override {
    uint32_t phase = s % 8, sig = (s / 8) % 32, zeros = s / 256;
    auto at = [](uint32_t p, uint32_t g, uint32_t z) { return p + 8 * g + 256 * z; };
    switch (phase) {
      case kStart:
        if (c == '-') return at(kMinus, 0, 0);
        [[fallthrough]];
      case kMinus:
        if (c == '0') return at(kZero, 0, 0);
        if (c >= '1' && c <= '9') return at(kInt, 1, 0);
        return kDead;
      case kZero:
      case kInt:
        if (c == '.') return sig > kMaxSignificant ? kDead : at(kDot, sig, 0);
        if (phase == kInt && c >= '0' && c <= '9') return at(kInt, std::min(sig + 1, kMaxSignificant + 1), 0);
        return kDead;
      case kDot:
      case kFrac:
        if (c < '0' || c > '9') return kDead;
        if (sig == 0 && c == '0') return zeros + 1 > kMaxFractionDigits ? kDead : at(kFrac, 0, zeros + 1);
        if (sig + 1 > kMaxSignificant) return kDead;
        return at(kFrac, sig + 1, zeros);
      default:
        return kDead;
    }
  }
  bool Final(uint32_t s) const override {
    uint32_t phase = s % 8;
    return phase == kZero || phase == kInt || phase == kFrac;
  }

 private:
  enum : uint32_t { kStart, kMinus, kZero, kInt, kDot, kFrac };
  static constexpr uint32_t kMaxSignificant = 15;
  static constexpr uint32_t kMaxFractionDigits = 300;
};

}  // namespace

StatusOr<std::unique_ptr<ByteMachine>> DenseMachine(const std::function<StatusOr<ExprId>(Grammar*)>& make,
                                                    const std::string& what) {
  Grammar g;
  DI_ASSIGN_OR_RETURN(ExprId e, make(&g));
  g.set_root(g.DefineRule("machine", e));
  Deadline deadline(5.0);
  auto a = BuildAutomaton(g, BuildLimits(), deadline);
  if (!a.ok()) {
    if (a.status().code() == StatusCode::kInvalidArgument) return std::unique_ptr<ByteMachine>();
    return a.status();
  }
  if (!a->rule_terminal[a->root]) return ResourceExhausted(what + ": automaton too large for a product");
  return std::unique_ptr<ByteMachine>(std::make_unique<DenseRuleMachine>(std::move(*a)));
}

std::unique_ptr<ByteMachine> JsonLengthMachine(int64_t min_len, std::optional<int64_t> max_len) {
  return std::make_unique<LengthMachine>(min_len, max_len);
}

std::unique_ptr<ByteMachine> MultipleOfMachine(int64_t k) { return std::make_unique<ModuloMachine>(k, 0); }

std::unique_ptr<ByteMachine> ScaledMultipleOfMachine(int64_t k, int j) {
  int64_t modulus = k;
  for (int i = 0; i < j; ++i) modulus *= 5;
  return std::make_unique<ModuloMachine>(modulus, j);
}

std::unique_ptr<ByteMachine> DecimalBoundMachine(const Decimal& bound, bool lower, bool strict) {
  return std::make_unique<BoundMachine>(bound, lower, strict);
}

std::unique_ptr<ByteMachine> DecimalSyntaxMachine() { return std::make_unique<SyntaxMachine>(); }

std::optional<Decimal> DecimalOf(double v, int max_significant) {
  if (!std::isfinite(v) || std::fabs(v) >= 1e15) return std::nullopt;
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-2.25e+00"
  Decimal d;
  size_t i = 0;
  if (sci[0] == '-') {
    d.negative = true;
    i = 1;
  }
  size_t e = sci.find('e');
  std::string digits;
  for (size_t j = i; j < e; ++j) {
    if (sci[j] != '.') digits.push_back(sci[j]);
  }
  int exponent = std::stoi(sci.substr(e + 1));
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (static_cast<int>(digits.size()) > max_significant) return std::nullopt;
  if (digits == "0") {
    d.negative = false;
    return d;
  }
  if (exponent >= 0) {
    std::string padded = digits;
    if (static_cast<int>(padded.size()) < exponent + 1) padded.append(exponent + 1 - padded.size(), '0');
    d.int_digits = padded.substr(0, exponent + 1);
    d.frac_digits = padded.substr(exponent + 1);
  } else {
    d.int_digits = "0";
    d.frac_digits = std::string(-exponent - 1, '0') + digits;
  }
  while (!d.frac_digits.empty() && d.frac_digits.back() == '0') d.frac_digits.pop_back();
  return d;
}

StatusOr<std::optional<ByteAutomaton>> MachineProduct(const std::vector<ProductFactor>& factors,
                                                      size_t max_states) {
  std::map<std::vector<uint32_t>, uint32_t> ids;
  std::vector<std::vector<uint32_t>> tuples;
  auto intern = [&](std::vector<uint32_t> t) {
    auto [it, inserted] = ids.emplace(t, static_cast<uint32_t>(tuples.size()));
    if (inserted) tuples.push_back(std::move(t));
    return it->second;
  };
  std::vector<uint32_t> start;
  for (const ProductFactor& f : factors) start.push_back(f.machine->Start());
  intern(start);
  ByteAutomaton out;
  bool any_final = false;
  std::vector<uint32_t> next(factors.size()), prev;
  for (size_t d = 0; d < tuples.size(); ++d) {
    if (tuples.size() > max_states) {
      return ResourceExhausted("constraint automaton above " + std::to_string(max_states) + " states");
    }
    const std::vector<uint32_t> t = tuples[d];
    bool final = true;
    for (size_t f = 0; f < factors.size(); ++f) {
      bool accepts = t[f] != ByteMachine::kDead && factors[f].machine->Final(t[f]);
      final &= accepts == factors[f].required;
    }
    any_final |= final;
    out.is_final.push_back(final);
    std::vector<ByteAutomaton::Edge> edges;
    prev.clear();
    uint32_t prev_target = 0;
    for (int b = 0; b < 256; ++b) {
      bool dead = false;
      for (size_t f = 0; f < factors.size() && !dead; ++f) {
        next[f] = t[f] == ByteMachine::kDead ? ByteMachine::kDead
                                             : factors[f].machine->Next(t[f], static_cast<uint8_t>(b));
        dead = next[f] == ByteMachine::kDead && factors[f].required;
      }
      if (dead) {
        prev.clear();
        continue;
      }
      if (next == prev) {  // extends the previous byte's edge
        edges.back().hi = static_cast<uint8_t>(b);
        continue;
      }
      prev_target = intern(next);
      prev = next;
      edges.push_back({static_cast<uint8_t>(b), static_cast<uint8_t>(b), prev_target});
    }
    out.edges.push_back(std::move(edges));
  }
  if (!any_final) return std::optional<ByteAutomaton>();
  return std::optional<ByteAutomaton>(std::move(out));
}

}  // namespace deepinfer::grammar
