#include "grammar/json_primitives.h"

#include <string>

#include "grammar/regex.h"
#include "grammar/utf8.h"

namespace deepinfer::grammar {

namespace {

ExprId Digits(Grammar* g) { return g->Bytes({{'0', '9'}}); }

// Digit strings of equal length L in [lo, hi] (decimal strings, lo <= hi).
// Recursion depth is the number of digits (<= 19).
ExprId SameLengthRange(Grammar* g, const std::string& lo, const std::string& hi) {
  size_t n = lo.size();
  if (n == 1) return g->Bytes({{static_cast<uint8_t>(lo[0]), static_cast<uint8_t>(hi[0])}});
  if (lo[0] == hi[0]) {
    return g->Sequence(
        {g->Byte(static_cast<uint8_t>(lo[0])), SameLengthRange(g, lo.substr(1), hi.substr(1))});
  }
  std::string zeros(n - 1, '0'), nines(n - 1, '9');
  std::vector<ExprId> alts;
  char first_full = lo[0], last_full = hi[0];
  if (lo.substr(1) != zeros) {
    alts.push_back(
        g->Sequence({g->Byte(static_cast<uint8_t>(lo[0])), SameLengthRange(g, lo.substr(1), nines)}));
    ++first_full;
  }
  bool hi_partial = hi.substr(1) != nines;
  if (hi_partial) --last_full;
  if (first_full <= last_full) {
    alts.push_back(
        g->Sequence({g->Bytes({{static_cast<uint8_t>(first_full), static_cast<uint8_t>(last_full)}}),
                     g->Repeat(Digits(g), static_cast<int32_t>(n - 1), static_cast<int32_t>(n - 1))}));
  }
  if (hi_partial) {
    alts.push_back(
        g->Sequence({g->Byte(static_cast<uint8_t>(hi[0])), SameLengthRange(g, zeros, hi.substr(1))}));
  }
  return g->Choice(std::move(alts));
}

// Non-negative integers in [lo, hi] (hi = nullopt: unbounded), no leading zeros.
ExprId NonNegativeRange(Grammar* g, int64_t lo, std::optional<int64_t> hi) {
  std::vector<ExprId> alts;
  std::string los = std::to_string(lo);
  size_t max_len = hi ? std::to_string(*hi).size() : los.size();
  for (size_t len = los.size(); len <= max_len; ++len) {
    std::string a(len, '0');  // smallest len-digit number (built in place:
    a[0] = '1';               // GCC 12 warns falsely on "1" + string)
    if (len == los.size()) a = los;
    std::string b = std::string(len, '9');
    if (hi && len == max_len) b = std::to_string(*hi);
    if (a.size() == b.size() && a <= b) alts.push_back(SameLengthRange(g, a, b));
  }
  if (!hi) {  // every longer number
    alts.push_back(g->Sequence({g->Bytes({{'1', '9'}}), g->Repeat(Digits(g), static_cast<int32_t>(los.size()),
                                                                  Grammar::kUnbounded)}));
  }
  return g->Choice(std::move(alts));
}

ExprId Hex(Grammar* g) { return g->Bytes({{'0', '9'}, {'A', 'F'}, {'a', 'f'}}); }

}  // namespace

ExprId JsonEscape(Grammar* g) {
  return g->Sequence({g->Byte('\\'), g->Choice({g->Bytes({{'"', '"'},
                                                          {'\\', '\\'},
                                                          {'/', '/'},
                                                          {'b', 'b'},
                                                          {'f', 'f'},
                                                          {'n', 'n'},
                                                          {'r', 'r'},
                                                          {'t', 't'}}),
                                                g->Sequence({g->Byte('u'), g->Repeat(Hex(g), 4, 4)})})});
}

ExprId JsonStringChar(Grammar* g) {
  std::vector<CodepointRange> plain = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCodepoint}};
  return g->Choice({Utf8Class(g, plain), JsonEscape(g)});
}

ExprId JsonString(Grammar* g, int64_t min_len, std::optional<int64_t> max_len) {
  ExprId ch = JsonStringChar(g);
  ExprId body = g->Repeat(ch, static_cast<int32_t>(min_len),
                          max_len ? static_cast<int32_t>(*max_len) : Grammar::kUnbounded);
  return g->Sequence({g->Byte('"'), body, g->Byte('"')});
}

ExprId JsonCanonicalString(Grammar* g) {
  std::vector<ExprId> chars = {Utf8Class(g, {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCodepoint}}),
                               g->Literal("\\\""), g->Literal("\\\\")};
  for (int c = 0; c < 0x20; ++c) {
    const char* hex = "0123456789abcdef";
    std::string spelled = "\\u00";
    spelled += hex[c >> 4];
    spelled += hex[c & 15];
    switch (c) {
      case '\b':
        spelled = "\\b";
        break;
      case '\f':
        spelled = "\\f";
        break;
      case '\n':
        spelled = "\\n";
        break;
      case '\r':
        spelled = "\\r";
        break;
      case '\t':
        spelled = "\\t";
        break;
      default:
        break;
    }
    chars.push_back(g->Literal(spelled));
  }
  return g->Sequence({g->Byte('"'), g->Star(g->Choice(std::move(chars))), g->Byte('"')});
}

StatusOr<ExprId> JsonStringPattern(Grammar* g, const std::string& pattern) {
  RegexOptions opts;
  opts.search = true;
  opts.json_string_content = true;
  DI_ASSIGN_OR_RETURN(ExprId body, ParseRegex(pattern, opts, g));
  return g->Sequence({g->Byte('"'), body, g->Byte('"')});
}

std::optional<std::string> FormatRegex(const std::string& format) {
  // Day ranges per month, Feb 29 only in leap years (Gregorian rule on the
  // 4-digit year); leap seconds (:60) are not generated.
  static const std::string kLeapYear =
      R"((\d\d(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00))";
  // Years 0001-9999: year 0000 fits RFC 3339's 4DIGIT but common validators
  // (e.g. Python's datetime, used by python3-jsonschema) reject it.
  static const std::string kYear = R"(([1-9]\d{3}|0[1-9]\d{2}|00[1-9]\d|000[1-9]))";
  static const std::string kDate = "(" + kYear + R"(-(0[13578]|1[02])-(0[1-9]|[12]\d|3[01])|)" + kYear +
                                   R"(-(0[469]|11)-(0[1-9]|[12]\d|30)|)" + kYear +
                                   R"(-02-(0[1-9]|1\d|2[0-8])|)" + kLeapYear + "-02-29)";
  static const std::string kTime =
      R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d))";
  static const std::string kOctet = R"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))";
  static const std::string kH = "[0-9a-fA-F]{1,4}";
  if (format == "date") return "^" + kDate + "$";
  if (format == "time") return "^" + kTime + "$";
  if (format == "date-time") return "^" + kDate + "[Tt]" + kTime + "$";
  if (format == "uuid") {
    return R"(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)";
  }
  if (format == "email") {
    return R"(^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*)"
           R"(@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$)";
  }
  // RFC 3986 characters: unreserved / reserved / pct-encoded (the
  // component structure is not checked).
  static const std::string kUriChars = R"(([A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2}))";
  if (format == "uri") return "^[A-Za-z][A-Za-z0-9+.-]*:" + kUriChars + "*$";
  if (format == "uri-reference") return "^" + kUriChars + "*$";
  // RFC 1123 host names: dot-separated labels of 1-63 letters, digits and
  // inner hyphens (the 253-byte total is not checked).
  if (format == "hostname") {
    static const std::string kLabel = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
    return "^" + kLabel + "(\\." + kLabel + ")*$";
  }
  // RFC 3339 appendix A (ISO 8601 durations, no fractions).
  if (format == "duration") {
    static const std::string kTimePart = R"(T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S))";
    return R"(^P((\d+D|\d+M(\d+D)?|\d+Y(\d+M(\d+D)?)?)()" + kTimePart + ")?|" + kTimePart + R"(|\d+W)$)";
  }
  if (format == "ipv4") return "^(" + kOctet + "\\.){3}" + kOctet + "$";
  if (format == "ipv6") {
    std::string h = kH;
    return "^(" + ("(" + h + ":){7}" + h) + "|(" + h + ":){1,7}:" + "|(" + h + ":){1,6}:" + h + "|(" + h +
           ":){1,5}(:" + h + "){1,2}" + "|(" + h + ":){1,4}(:" + h + "){1,3}" + "|(" + h + ":){1,3}(:" + h +
           "){1,4}" + "|(" + h + ":){1,2}(:" + h + "){1,5}" + "|" + h + ":(:" + h + "){1,6}" + "|:((:" + h +
           "){1,7}|:))$";
  }
  return std::nullopt;
}

ExprId JsonInteger(Grammar* g) {
  return g->Sequence({g->Optional(g->Byte('-')),
                      g->Choice({g->Byte('0'), g->Sequence({g->Bytes({{'1', '9'}}), g->Star(Digits(g))})})});
}

namespace {
ExprId FractionExponent(Grammar* g) {
  return g->Sequence(
      {g->Optional(g->Sequence({g->Byte('.'), g->Plus(Digits(g))})),
       g->Optional(g->Sequence({g->Bytes({{'E', 'E'}, {'e', 'e'}}),
                                g->Optional(g->Bytes({{'+', '+'}, {'-', '-'}})), g->Plus(Digits(g))}))});
}
}  // namespace

ExprId JsonNumber(Grammar* g) { return g->Sequence({JsonInteger(g), FractionExponent(g)}); }

ExprId NonNegativeNumber(Grammar* g, bool strictly_positive) {
  ExprId natural = g->Choice({g->Byte('0'), g->Sequence({g->Bytes({{'1', '9'}}), g->Star(Digits(g))})});
  if (!strictly_positive) return g->Sequence({natural, FractionExponent(g)});
  // No negative exponent and at most 300 leading fraction zeros: a value
  // like 5e-999 is > 0 exactly but 0.0 as a double, so validators that parse
  // numbers as doubles (most) would reject it. Refusing those few spellings
  // keeps every generated number > 0 wherever it is checked.
  ExprId exponent = g->Optional(
      g->Sequence({g->Bytes({{'E', 'E'}, {'e', 'e'}}), g->Optional(g->Byte('+')), g->Plus(Digits(g))}));
  // > 0: a non-zero integer part, or "0." followed by a non-zero digit somewhere.
  ExprId positive_int = g->Sequence({g->Bytes({{'1', '9'}}), g->Star(Digits(g)),
                                     g->Optional(g->Sequence({g->Byte('.'), g->Plus(Digits(g))}))});
  ExprId small = g->Sequence(
      {g->Literal("0."), g->Repeat(g->Byte('0'), 0, 300), g->Bytes({{'1', '9'}}), g->Star(Digits(g))});
  return g->Sequence({g->Choice({positive_int, small}), exponent});
}

ExprId IntegerRange(Grammar* g, std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<ExprId> alts;
  // Negative part: -x with x in [max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    int64_t neg_lo = (hi && *hi < 0) ? -*hi : 1;
    std::optional<int64_t> neg_hi = lo ? std::optional<int64_t>(-*lo) : std::nullopt;
    if (!neg_hi || neg_lo <= *neg_hi) {
      alts.push_back(g->Sequence({g->Byte('-'), NonNegativeRange(g, neg_lo, neg_hi)}));
    }
  }
  if (!hi || *hi >= 0) {
    int64_t pos_lo = (lo && *lo > 0) ? *lo : 0;
    if (!hi || pos_lo <= *hi) alts.push_back(NonNegativeRange(g, pos_lo, hi));
  }
  return g->Choice(std::move(alts));
}

namespace {

int DigitCount(int64_t v) { return v == 0 ? 0 : static_cast<int>(std::to_string(v).size()); }

// Fraction forms for one integer part I of a bounded number.
ExprId AnyFraction(Grammar* g) { return g->Optional(g->Sequence({g->Byte('.'), g->Plus(Digits(g))})); }
ExprId ZeroFraction(Grammar* g) { return g->Optional(g->Sequence({g->Byte('.'), g->Plus(g->Byte('0'))})); }
// At most `k` fraction digits (none if k <= 0).
ExprId CappedFraction(Grammar* g, int k) {
  if (k <= 0) return g->Empty();
  return g->Optional(g->Sequence({g->Byte('.'), g->Repeat(Digits(g), 1, k)}));
}
// A fraction with a non-zero digit, at most `k` digits (k < 0: any length).
ExprId NonZeroFraction(Grammar* g, int k) {
  if (k < 0) {
    // 0.000...1 with at most 300 zeros: tinier values are 0.0 as doubles.
    return g->Sequence(
        {g->Byte('.'), g->Repeat(g->Byte('0'), 0, 300), g->Bytes({{'1', '9'}}), g->Star(Digits(g))});
  }
  std::vector<ExprId> alts;
  for (int zeros = 0; zeros < k; ++zeros) {
    alts.push_back(g->Sequence({g->Byte('.'), g->Repeat(g->Byte('0'), zeros, zeros), g->Bytes({{'1', '9'}}),
                                g->Repeat(Digits(g), 0, k - 1 - zeros)}));
  }
  return g->Choice(std::move(alts));
}

// Numbers x >= 0 written without sign or exponent, lo <= x (lo < x when
// lo_strict) and, if given, x <= hi (x < hi). Bounds are integers below
// 1e15. Split by integer part I: the parts strictly inside take any
// fraction; I = hi takes only zero fractions; I = lo (strict) only non-zero
// ones. Where x is within one unit of a strict bound, the digits are capped
// at 15 significant ones: such a decimal never rounds onto the bound as a
// double, so validators that parse numbers as doubles agree.
ExprId NonNegativeNumberRange(Grammar* g, int64_t lo, bool lo_strict, std::optional<int64_t> hi,
                              bool hi_strict) {
  std::vector<ExprId> alts;
  auto digits = [](int64_t v) { return 15 - DigitCount(v); };
  int64_t any_lo = lo_strict ? lo + 1 : lo;
  std::optional<int64_t> any_hi;
  if (hi) any_hi = *hi - 1;
  // I = hi - 1 under a strict hi: capped fraction.
  std::optional<int64_t> capped_i;
  if (hi && hi_strict && *hi - 1 >= any_lo) {
    capped_i = *hi - 1;
    any_hi = *hi - 2;
  }
  if (!any_hi || any_lo <= *any_hi) {
    alts.push_back(g->Sequence({NonNegativeRange(g, any_lo, any_hi), AnyFraction(g)}));
  }
  if (capped_i) {
    alts.push_back(
        g->Sequence({g->Literal(std::to_string(*capped_i)), CappedFraction(g, digits(*capped_i))}));
  }
  if (lo_strict && (!hi || lo < *hi)) {  // I = lo, x = lo + a non-zero fraction
    bool near_hi = hi && hi_strict && lo == *hi - 1;
    int k = lo == 0 && !near_hi ? -1 : digits(lo);
    alts.push_back(g->Sequence({g->Literal(std::to_string(lo)), NonZeroFraction(g, k)}));
  }
  if (hi && !hi_strict && (lo_strict ? *hi > lo : *hi >= lo)) {  // I = hi, x = hi exactly
    alts.push_back(g->Sequence({g->Literal(std::to_string(*hi)), ZeroFraction(g)}));
  }
  return g->Choice(std::move(alts));
}

}  // namespace

ExprId NumberRange(Grammar* g, std::optional<int64_t> lo, bool lo_strict, std::optional<int64_t> hi,
                   bool hi_strict) {
  std::vector<ExprId> alts;
  // x = -M with M > 0: -hi <= M (strict as hi) and M <= -lo (strict as lo).
  if (!lo || *lo < 0) {
    int64_t m_lo = 0;
    bool m_lo_strict = true;
    if (hi && *hi < 0) {
      m_lo = -*hi;
      m_lo_strict = hi_strict;
    }
    std::optional<int64_t> m_hi;
    if (lo) m_hi = -*lo;
    bool empty = m_hi && (m_lo > *m_hi || (m_lo == *m_hi && (m_lo_strict || lo_strict)));
    if (!empty) {
      alts.push_back(
          g->Sequence({g->Byte('-'), NonNegativeNumberRange(g, m_lo, m_lo_strict, m_hi, lo_strict)}));
    }
  }
  // x >= 0.
  if (!hi || *hi > 0 || (*hi == 0 && !hi_strict)) {
    int64_t p_lo = lo && *lo >= 0 ? *lo : 0;
    bool p_lo_strict = lo && *lo >= 0 && lo_strict;
    bool empty = hi && (p_lo > *hi || (p_lo == *hi && (p_lo_strict || hi_strict)));
    if (!empty) alts.push_back(NonNegativeNumberRange(g, p_lo, p_lo_strict, hi, hi_strict));
  }
  return g->Choice(std::move(alts));
}

RuleId AnyJsonValueRule(Grammar* g, ExprId ws) {
  RuleId value = g->AddRule("json_value");
  RuleId string = g->DefineRule("json_string", JsonString(g, 0, std::nullopt));
  RuleId number = g->DefineRule("json_number", JsonNumber(g));
  ExprId sep = g->Sequence({ws, g->Byte(','), ws});
  ExprId member = g->Sequence({g->Ref(string), ws, g->Byte(':'), ws, g->Ref(value)});
  RuleId object = g->DefineRule(
      "json_object",
      g->Sequence({g->Byte('{'), ws, g->Optional(g->Sequence({member, g->Star(g->Sequence({sep, member}))})),
                   ws, g->Byte('}')}));
  RuleId array = g->DefineRule(
      "json_array",
      g->Sequence({g->Byte('['), ws,
                   g->Optional(g->Sequence({g->Ref(value), g->Star(g->Sequence({sep, g->Ref(value)}))})), ws,
                   g->Byte(']')}));
  g->SetBody(value, g->Choice({g->Ref(object), g->Ref(array), g->Ref(string), g->Ref(number),
                               g->Literal("true"), g->Literal("false"), g->Literal("null")}));
  return value;
}

}  // namespace deepinfer::grammar
