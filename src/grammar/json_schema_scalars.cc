// Strings and numbers of the JSON Schema front end (see json_schema_converter.h).
#include <cmath>
#include <numeric>

#include "grammar/json_constrained.h"
#include "grammar/json_schema_converter.h"

namespace deepinfer::grammar::json_schema_internal {

StatusOr<ExprId> SchemaConverter::BuildString(const Json& s, const std::string& path) {
  StringConstraints c;
  DI_ASSIGN_OR_RETURN(c.min_len, Count(s, "minLength", 0, kMaxStringLength, path));
  if (s.contains("maxLength")) {
    DI_ASSIGN_OR_RETURN(int64_t m, Count(s, "maxLength", 0, kMaxStringLength, path));
    c.max_len = m;
  }
  // Contradictory bounds written by the user are refused up front
  // (CheckContradictoryBounds); here they come from a rewrite or merge,
  // where an empty branch is just empty.
  if (c.max_len && *c.max_len < c.min_len) return g_->Nothing();
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return InvalidArgument("pattern at " + path + "/pattern is not a string");
    c.patterns.push_back(s["pattern"].get<std::string>());
  }
  if (s.contains("format") && s["format"].is_string()) {
    std::optional<std::string> f = FormatRegex(s["format"].get<std::string>());
    if (f) c.patterns.push_back(*f);
  }
  auto strings = [](const Json& s, const char* key) {
    std::vector<std::string> out;
    if (s.contains(key) && s[key].is_array()) {
      for (const Json& x : s[key]) {
        if (x.is_string()) out.push_back(x.get<std::string>());
      }
    }
    return out;
  };
  for (const std::string& p : strings(s, kPatternsKeyword)) c.patterns.push_back(p);
  c.not_patterns = strings(s, kNotPattern);
  c.not_values = strings(s, kNotIn);
  std::string key = Json{
      {"min", c.min_len},
      {"max", c.max_len ? Json(*c.max_len) : Json()},
      {"p", c.patterns},
      {"np", c.not_patterns},
      {"nv",
       c.not_values}}.dump();
  auto built = StringRule(key, [&]() { return ConstrainedJsonString(g_, c); });
  if (built.ok() || (built.status().code() != StatusCode::kUnimplemented &&
                     built.status().code() != StatusCode::kResourceExhausted)) {
    if (!built.ok())
      return Status(built.status().code(), "pattern at " + path + ": " + built.status().message());
    return built;
  }
  // Relaxed: a pattern the regex front end cannot take, or a product too
  // large; keep the length bounds alone.
  Unsupported(path, "pattern/format (" + built.status().message() + ")");
  return StringRule("n:" + std::to_string(c.min_len) + ":" + (c.max_len ? std::to_string(*c.max_len) : ""),
                    [&]() -> StatusOr<ExprId> { return JsonString(g_, c.min_len, c.max_len); });
}

StatusOr<ExprId> SchemaConverter::BuildNumber(const Json& s, const std::string& path, bool integer) {
  std::optional<double> lo, hi;
  bool lo_strict = false, hi_strict = false;
  // Draft-04: exclusiveMinimum / exclusiveMaximum are booleans that make
  // minimum / maximum strict.
  bool d4_lo = s.value("exclusiveMinimum", Json()) == Json(true);
  bool d4_hi = s.value("exclusiveMaximum", Json()) == Json(true);
  for (const char* k : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
    if (!s.contains(k)) continue;
    std::string key = k;
    bool exclusive = key.rfind("exclusive", 0) == 0;
    if (exclusive && s[k].is_boolean()) continue;
    if (!s[k].is_number()) return InvalidArgument(key + " at " + path + "/" + key + " is not a number");
    double v = s[k].get<double>();
    bool is_min = key == "minimum" || key == "exclusiveMinimum";
    bool strict = exclusive || (key == "minimum" && d4_lo) || (key == "maximum" && d4_hi);
    if (is_min && (!lo || v > *lo || (v == *lo && strict))) {
      lo = v;
      lo_strict = strict;
    }
    if (!is_min && (!hi || v < *hi || (v == *hi && strict))) {
      hi = v;
      hi_strict = strict;
    }
  }
  // multipleOf = multiple / 2^scale (0: none). Power-of-two denominators
  // only: a validator's double division checks exactly those.
  int64_t multiple = 0;
  int scale = 0;
  if (s.contains("multipleOf")) {
    const Json& m = s["multipleOf"];
    if (!m.is_number() || m.get<double>() <= 0) {
      return InvalidArgument("multipleOf at " + path + "/multipleOf is not a positive number");
    }
    double k = m.get<double>();
    for (int j = 0; j <= 6 && multiple == 0; ++j) {
      double scaled = std::ldexp(k, j);  // exact
      double modulus = scaled * std::pow(5.0, j);
      if (std::floor(scaled) == scaled && modulus <= static_cast<double>(kMaxMultipleOf)) {
        multiple = static_cast<int64_t>(scaled);
        scale = j;
      }
    }
    if (multiple == 0) {
      Unsupported(path, "multipleOf other than k/2^j with k*5^j <= " + std::to_string(kMaxMultipleOf) +
                            " (e.g. 0.01: validators' double division is inexact)");
    }
  }
  if (integer && multiple > 0 && scale > 0) {  // integers: x * 2^j / k whole
    multiple /= std::gcd(multiple, int64_t{1} << scale);
    scale = 0;
  }
  bool non_integral = s.value(kNotIntegral, Json(false)) == Json(true);
  if (integer && non_integral) return g_->Nothing();
  Json not_in = NotIn(s);
  if (integer) {
    std::optional<int64_t> ilo, ihi;
    if ((lo && std::fabs(*lo) > kMaxIntegerBound) || (hi && std::fabs(*hi) > kMaxIntegerBound)) {
      Unsupported(path, "integer bound beyond 1e17");
      return JsonInteger(g_);
    }
    if (lo) {
      double c = std::ceil(*lo);
      ilo = static_cast<int64_t>(lo_strict && c == *lo ? c + 1 : c);
    }
    if (hi) {
      double f = std::floor(*hi);
      ihi = static_cast<int64_t>(hi_strict && f == *hi ? f - 1 : f);
    }
    if (ilo && ihi && *ilo > *ihi) return g_->Nothing();
    IntegerConstraints c{ilo, ihi, multiple > 1 ? multiple : 1, {}};
    for (const Json& v : not_in) {
      if (v.is_number_integer()) c.excluded.push_back(v.get<int64_t>());
      if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
          std::fabs(v.get<double>()) < kMaxNumberBound) {
        c.excluded.push_back(static_cast<int64_t>(v.get<double>()));
      }
    }
    auto e = ConstrainedJsonInteger(g_, c);
    if (e.ok() || e.status().code() != StatusCode::kResourceExhausted) return e;
    Unsupported(path, "multipleOf / not enum (" + e.status().message() + ")");
    return IntegerRange(g_, ilo, ihi);
  }
  if (lo && hi && (*lo > *hi || (*lo == *hi && (lo_strict || hi_strict)))) return g_->Nothing();
  std::vector<Decimal> excluded;
  for (const Json& v : not_in) {
    if (!v.is_number()) continue;
    std::optional<Decimal> d = DecimalOf(v.get<double>(), 15);
    if (d) {
      excluded.push_back(*d);
    } else {
      Unsupported(path, "not enum/const of a number with more than 15 digits");
    }
  }
  bool simple = multiple == 0 && excluded.empty() && !non_integral;
  if (simple && !lo && !hi) return JsonNumber(g_);
  if (simple && lo && *lo == 0 && !hi) return NonNegativeNumber(g_, lo_strict);  // keeps exponents
  auto integral = [](double v) { return std::floor(v) == v && std::fabs(v) <= kMaxNumberBound; };
  if (simple && (!lo || integral(*lo)) && (!hi || integral(*hi))) {
    // Integer-valued bounds: a decimal-range pattern (no exponent; NumberRange).
    auto as_int = [](std::optional<double> v) -> std::optional<int64_t> {
      if (!v) return std::nullopt;
      return static_cast<int64_t>(*v);
    };
    return NumberRange(g_, as_int(lo), lo_strict, as_int(hi), hi_strict);
  }
  // Fractional bounds, multipleOf, excluded values: exact digit automata.
  NumberConstraints c;
  c.lo_strict = lo_strict;
  c.hi_strict = hi_strict;
  c.multiple_of = multiple;
  c.multiple_of_scale = scale;
  c.non_integral = non_integral;
  c.excluded = std::move(excluded);
  for (auto [bound, out] : {std::pair{&lo, &c.lo}, std::pair{&hi, &c.hi}}) {
    if (!*bound) continue;
    *out = DecimalOf(**bound, 15);
    if (!*out) {
      Unsupported(path, "number bounds with more than 15 significant digits or magnitude >= 1e15");
      return JsonNumber(g_);
    }
  }
  auto e = ConstrainedJsonNumber(g_, c);
  if (e.ok() || e.status().code() != StatusCode::kResourceExhausted) return e;
  Unsupported(path, "number bounds / multipleOf (" + e.status().message() + ")");
  return JsonNumber(g_);
}

}  // namespace deepinfer::grammar::json_schema_internal
