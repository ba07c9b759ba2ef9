// Product automata of byte_machine.h through the JSON Schema front end:
// fractional / exclusive bounds against exact decimal comparison (and the
// double comparison validators use), multipleOf against integer remainder,
// pattern ∩ length against counted code points, on random inputs.
#include "grammar/byte_machine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "grammar/json_schema.h"
#include "grammar/testing/test_util.h"

namespace deepinfer::grammar {
namespace {

using Json = nlohmann::ordered_json;

std::shared_ptr<const CompiledGrammar> Compile(const std::string& schema) {
  auto g = JsonSchemaToGrammar(schema);
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status().ToString();
  if (!g.ok()) return nullptr;
  return testing::CompileOrDie(*g, testing::AllStringsVocab("0", 1));
}

// Sign of (a - b) for decimal texts -?D+(.D+)?, exactly: align the
// fractions and compare digit strings.
int CompareDecimal(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s, bool* neg, std::string* i, std::string* f) {
    size_t p = 0;
    *neg = !s.empty() && s[0] == '-';
    if (*neg) p = 1;
    size_t dot = s.find('.');
    *i = s.substr(p, dot == std::string::npos ? std::string::npos : dot - p);
    *f = dot == std::string::npos ? "" : s.substr(dot + 1);
    i->erase(0, std::min(i->find_first_not_of('0'), i->size()));
  };
  bool na, nb;
  std::string ia, fa, ib, fb;
  split(a, &na, &ia, &fa);
  split(b, &nb, &ib, &fb);
  size_t width = std::max(fa.size(), fb.size());
  fa.resize(width, '0');
  fb.resize(width, '0');
  auto zero = [](const std::string& i, const std::string& f) {
    return i.empty() && f.find_first_not_of('0') == std::string::npos;
  };
  if (zero(ia, fa)) na = false;
  if (zero(ib, fb)) nb = false;
  if (na != nb) return na ? -1 : 1;
  int mag = 0;
  if (ia.size() != ib.size()) {
    mag = ia.size() < ib.size() ? -1 : 1;
  } else if (ia != ib) {
    mag = ia < ib ? -1 : 1;
  } else if (fa != fb) {
    mag = fa < fb ? -1 : 1;
  }
  return na ? -mag : mag;
}

int SignificantDigits(const std::string& s) {
  std::string digits;
  for (char c : s) {
    if (c >= '0' && c <= '9') digits += c;
  }
  size_t first = digits.find_first_not_of('0');
  return first == std::string::npos ? 0 : static_cast<int>(digits.size() - first);
}

std::string RandomDecimalNear(std::mt19937& rng, const std::string& bound) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  std::string s;
  if (pick(3) == 0) {  // the bound itself, perturbed digit by digit
    s = bound;
    if (pick(2) == 0 && s.find('.') == std::string::npos) s += ".";
    if (pick(2) == 0) {
      s += std::string(static_cast<size_t>(pick(3)), '0');
      s += static_cast<char>('0' + pick(10));
    }
    if (s.back() == '.') s += "0";
  } else {
    if (pick(2) == 0) s += "-";
    s += std::to_string(pick(pick(2) == 0 ? 10 : 1000));
    if (pick(3) != 0) {
      s += ".";
      int len = 1 + pick(pick(4) == 0 ? 22 : 4);
      for (int k = 0; k < len; ++k) s += static_cast<char>('0' + pick(10));
    }
  }
  return s;
}

TEST(ByteMachineTest, FractionalBoundsAgreeWithExactAndDoubleComparison) {
  std::mt19937 rng(20261202);
  const std::vector<std::string> bounds = {"0.5",   "2.25",  "-1.5", "-0.125", "0.001",
                                           "10.75", "-3.75", "0",    "7"};
  int accepted = 0, rejected = 0;
  for (int config = 0; config < 30; ++config) {
    std::string lo = bounds[rng() % bounds.size()], hi = bounds[rng() % bounds.size()];
    if (CompareDecimal(lo, hi) > 0) std::swap(lo, hi);
    bool lo_strict = rng() % 2, hi_strict = rng() % 2;
    bool has_lo = rng() % 4 != 0, has_hi = rng() % 4 != 0 || !has_lo;
    if (has_lo && has_hi && CompareDecimal(lo, hi) == 0 && (lo_strict || hi_strict)) continue;  // empty
    Json schema = {{"type", "number"}};
    if (has_lo) schema[lo_strict ? "exclusiveMinimum" : "minimum"] = Json::parse(lo);
    if (has_hi) schema[hi_strict ? "exclusiveMaximum" : "maximum"] = Json::parse(hi);
    auto cg = Compile(schema.dump());
    ASSERT_NE(cg, nullptr);
    for (int n = 0; n < 300; ++n) {
      std::string x = RandomDecimalNear(rng, rng() % 2 ? lo : hi);
      bool exact = (!has_lo || CompareDecimal(x, lo) >= (lo_strict ? 1 : 0)) &&
                   (!has_hi || CompareDecimal(x, hi) <= (hi_strict ? -1 : 0));
      // JSON syntax (no leading zeros), and not a spelling of negative zero.
      size_t digits_at = x[0] == '-' ? 1 : 0;
      bool json = !(x.size() > digits_at + 1 && x[digits_at] == '0' && x[digits_at + 1] != '.');
      bool canonical = json && (x.rfind("-0", 0) != 0 || x.find_first_not_of("-0.") != std::string::npos);
      bool got = testing::Matches(cg, x);
      if (got) {
        ++accepted;
        EXPECT_TRUE(exact && json) << schema.dump() << " accepts " << x;
        double v = std::strtod(x.c_str(), nullptr);
        double dl = has_lo ? std::strtod(lo.c_str(), nullptr) : 0,
               dh = has_hi ? std::strtod(hi.c_str(), nullptr) : 0;
        EXPECT_TRUE(!has_lo || (lo_strict ? v > dl : v >= dl)) << schema.dump() << " as double: " << x;
        EXPECT_TRUE(!has_hi || (hi_strict ? v < dh : v <= dh)) << schema.dump() << " as double: " << x;
      } else {
        ++rejected;
        // Only spellings with more than 15 significant digits (or -0) may
        // be refused while exactly inside the bounds.
        bool short_enough = SignificantDigits(x) <= 15 || x.find('.') == std::string::npos;
        if (exact && canonical && short_enough) ADD_FAILURE() << schema.dump() << " rejects " << x;
      }
    }
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(rejected, 1000);
}

TEST(ByteMachineTest, MultipleOfAgreesWithRemainder) {
  std::mt19937 rng(7);
  for (int64_t k : {2, 3, 7, 25, 100, 997}) {
    for (bool integer : {true, false}) {
      if (!integer && k > 100) continue;  // larger products are relaxed (size limit)
      Json schema = {{"type", integer ? "integer" : "number"}, {"multipleOf", k}};
      if (rng() % 2) schema["minimum"] = -5000;
      if (rng() % 2) schema["exclusiveMaximum"] = 20000;
      auto cg = Compile(schema.dump());
      ASSERT_NE(cg, nullptr);
      for (int n = 0; n < 400; ++n) {
        int64_t v = static_cast<int64_t>(rng() % 60000) - 30000;
        if (n % 3 == 0) v = v / k * k;
        bool want = v % k == 0 && (!schema.contains("minimum") || v >= -5000) &&
                    (!schema.contains("exclusiveMaximum") || v < 20000);
        EXPECT_EQ(testing::Matches(cg, std::to_string(v)), want) << schema.dump() << " " << v;
        if (!integer) {  // a zero fraction is the same number; any other is not a multiple
          EXPECT_EQ(testing::Matches(cg, std::to_string(v) + ".00"), want) << schema.dump() << " " << v;
          EXPECT_FALSE(testing::Matches(cg, std::to_string(v) + ".5")) << schema.dump() << " " << v;
        }
      }
    }
  }
}

// multipleOf k / 2^j on decimals: x * 2^j / k is whole, checked in exact
// integer arithmetic on the spelling (X = x * 10^d for d fraction digits:
// X * 2^j must be a multiple of k * 10^d).
TEST(ByteMachineTest, ScaledMultipleOfAgreesWithExactArithmetic) {
  std::mt19937 rng(13);
  for (auto [k, j] : std::vector<std::pair<int64_t, int>>{{1, 1}, {1, 2}, {3, 2}, {5, 1}, {1, 3}, {7, 1}}) {
    double divisor = std::ldexp(static_cast<double>(k), -j);
    Json schema = {{"type", "number"}, {"multipleOf", divisor}, {"minimum", -100}, {"maximum", 100}};
    auto cg = Compile(schema.dump());
    ASSERT_NE(cg, nullptr);
    for (int n = 0; n < 500; ++n) {
      int64_t whole = static_cast<int64_t>(rng() % 200) - 100;
      int d = static_cast<int>(rng() % 4);
      int64_t frac = 0, pow10 = 1;
      std::string text = std::to_string(whole < 0 ? -whole : whole);
      if (d > 0) {
        text += ".";
        for (int i = 0; i < d; ++i) {
          int digit = static_cast<int>(rng() % 10);
          if (n % 2 == 0 && i > 0) digit = (i == 1 ? 5 : 0) * (rng() % 2);  // hit the multiples often
          frac = frac * 10 + digit;
          pow10 *= 10;
          text += static_cast<char>('0' + digit);
        }
      }
      if (whole < 0) text = "-" + text;
      int64_t big = (whole < 0 ? -1 : 1) * ((whole < 0 ? -whole : whole) * pow10 + frac);  // X
      bool want = (big * (int64_t{1} << j)) % (k * pow10) == 0;
      if (std::abs(static_cast<double>(big) / static_cast<double>(pow10)) > 100) want = false;
      EXPECT_EQ(testing::Matches(cg, text), want) << schema.dump() << " " << text;
    }
  }
}

TEST(ByteMachineTest, PatternAndLengthCountCodePoints) {
  std::mt19937 rng(11);
  const std::vector<std::string> chars = {"a", "b",  "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80",
                                          "1", "\\n"};
  for (auto [min_len, max_len] : std::vector<std::pair<int, int>>{{0, 3}, {2, 2}, {1, 6}, {4, 9}}) {
    Json schema = {
        {"type", "string"}, {"pattern", "^[^1]*$"}, {"minLength", min_len}, {"maxLength", max_len}};
    auto cg = Compile(schema.dump());
    ASSERT_NE(cg, nullptr);
    for (int n = 0; n < 300; ++n) {
      int len = static_cast<int>(rng() % 11);
      std::string body;
      bool has_one = false;
      for (int i = 0; i < len; ++i) {
        const std::string& c = chars[rng() % chars.size()];
        has_one |= c == "1";
        body += c;
      }
      bool want = !has_one && len >= min_len && len <= max_len;
      EXPECT_EQ(testing::Matches(cg, "\"" + body + "\""), want) << schema.dump() << " \"" << body << "\"";
    }
  }
}

TEST(ByteMachineTest, DecimalOfShortestSpelling) {
  struct Case {
    double v;
    bool negative;
    const char* int_digits;
    const char* frac_digits;
  };
  for (const Case& c : std::vector<Case>{{2.25, false, "2", "25"},
                                         {-0.125, true, "0", "125"},
                                         {0.001, false, "0", "001"},
                                         {1e10, false, "10000000000", ""},
                                         {-0.0, false, "0", ""},
                                         {123.5, false, "123", "5"}}) {
    std::optional<Decimal> d = DecimalOf(c.v, 15);
    ASSERT_TRUE(d.has_value()) << c.v;
    EXPECT_EQ(d->negative, c.negative) << c.v;
    EXPECT_EQ(d->int_digits, c.int_digits) << c.v;
    EXPECT_EQ(d->frac_digits, c.frac_digits) << c.v;
  }
  EXPECT_FALSE(DecimalOf(0.1 + 0.2, 15).has_value());  // 0.30000000000000004
  EXPECT_FALSE(DecimalOf(1e15, 15).has_value());
}

}  // namespace
}  // namespace deepinfer::grammar
