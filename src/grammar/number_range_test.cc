// Number bounds (minimum / maximum / exclusive*) with integer values:
// random decimal strings checked against exact decimal comparison and
// against the double comparison validators use (strtod), on random bounds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <random>
#include <string>

#include "grammar/json_schema.h"
#include "grammar/testing/test_util.h"

namespace deepinfer::grammar {
namespace {

struct Decimal {
  bool negative = false;
  std::string int_part;  // no leading zeros ("0" for zero)
  std::string fraction;  // may be empty
};

std::string Text(const Decimal& d) {
  return (d.negative ? "-" : "") + d.int_part + (d.fraction.empty() ? "" : "." + d.fraction);
}

// Exact sign of (d - b).
int Compare(const Decimal& d, int64_t b) {
  int64_t i = std::stoll(d.int_part);
  bool frac_nonzero = d.fraction.find_first_not_of('0') != std::string::npos;
  auto magnitude_vs = [&](int64_t c) {  // sign of (i + f - c), c any integer
    if (i != c) return i > c ? 1 : -1;
    return frac_nonzero ? 1 : 0;
  };
  return d.negative ? -magnitude_vs(-b) : magnitude_vs(b);
}

struct Bounds {
  std::optional<int64_t> lo, hi;
  bool lo_strict = false, hi_strict = false;
  std::string Schema() const {
    std::string s = R"({"type":"number")";
    if (lo) {
      s += std::string(",\"") + (lo_strict ? "exclusiveMinimum" : "minimum") + "\":" + std::to_string(*lo);
    }
    if (hi) {
      s += std::string(",\"") + (hi_strict ? "exclusiveMaximum" : "maximum") + "\":" + std::to_string(*hi);
    }
    return s + "}";
  }
  bool Holds(const Decimal& d) const {
    if (lo && Compare(d, *lo) < (lo_strict ? 1 : 0)) return false;
    if (hi && Compare(d, *hi) > (hi_strict ? -1 : 0)) return false;
    return true;
  }
  bool HoldsAsDouble(const std::string& text) const {
    double v = std::strtod(text.c_str(), nullptr);
    if (lo && (lo_strict ? !(v > static_cast<double>(*lo)) : !(v >= static_cast<double>(*lo)))) return false;
    if (hi && (hi_strict ? !(v < static_cast<double>(*hi)) : !(v <= static_cast<double>(*hi)))) return false;
    return true;
  }
};

Decimal RandomDecimal(std::mt19937& rng, const Bounds& b) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  Decimal d;
  d.negative = pick(2) == 0;
  // Integer parts near the bounds are the interesting ones.
  int64_t base = 0;
  switch (pick(4)) {
    case 0:
      base = b.lo.value_or(7);
      break;
    case 1:
      base = b.hi.value_or(-7);
      break;
    case 2:
      base = static_cast<int64_t>(rng() % 2000) - 1000;
      break;
    default:
      base = static_cast<int64_t>(rng() % 1000000007);
  }
  base += pick(5) - 2;
  if (base < 0) {
    d.negative = true;
    base = -base;
  } else if (base > 0) {
    d.negative = false;
  }
  d.int_part = std::to_string(base);
  if (pick(3) != 0) {
    int len = 1 + pick(pick(2) == 0 ? 4 : 20);
    int style = pick(4);  // random / zeros / nines / zeros then a digit
    for (int k = 0; k < len; ++k) {
      char c = static_cast<char>('0' + pick(10));
      if (style == 1) c = '0';
      if (style == 2) c = '9';
      if (style == 3) c = k + 1 == len ? '1' : '0';
      d.fraction += c;
    }
  }
  return d;
}

TEST(NumberRangeTest, RandomBoundsAgreeWithExactAndDoubleComparison) {
  std::mt19937 rng(20261129);
  auto vocab = testing::AllStringsVocab("0", 1);
  const int64_t kBigBound = 1000000000000000;  // 1e15, the largest accepted
  int accepted = 0, rejected = 0;
  for (int config = 0; config < 40; ++config) {
    Bounds b;
    auto value = [&]() -> int64_t {
      switch (rng() % 4) {
        case 0:
          return static_cast<int64_t>(rng() % 3) - 1;
        case 1:
          return rng() % 2 ? kBigBound : -kBigBound;
        default:
          return static_cast<int64_t>(rng() % 400) - 200;
      }
    };
    if (rng() % 4 != 0) b.lo = value();
    if (rng() % 4 != 0 || !b.lo) b.hi = value();
    if (b.lo && b.hi && *b.lo > *b.hi) std::swap(b.lo, b.hi);
    b.lo_strict = rng() % 2;
    b.hi_strict = rng() % 2;
    std::string schema = b.Schema();
    auto g = JsonSchemaToGrammar(schema);
    ASSERT_TRUE(g.ok()) << schema << ": " << g.status().ToString();
    auto cg = testing::CompileOrDie(*g, vocab);
    ASSERT_NE(cg, nullptr);
    for (int n = 0; n < 300; ++n) {
      Decimal d = RandomDecimal(rng, b);
      std::string text = Text(d);
      bool matches = testing::Matches(cg, text);
      bool is_negative_zero = d.negative && Compare(d, 0) == 0;
      // Sound: whatever is accepted holds exactly and as a double.
      if (matches) {
        EXPECT_TRUE(b.Holds(d) && b.HoldsAsDouble(text)) << schema << " accepted " << text;
      }
      // Complete up to 15 significant digits (longer fractions next to a
      // strict bound are refused on purpose) and the "-0" spelling.
      size_t digits = (d.int_part == "0" ? 0 : d.int_part.size()) + d.fraction.size();
      if (b.Holds(d) && digits <= 15 && !is_negative_zero) {
        EXPECT_TRUE(matches) << schema << " rejected " << text;
      }
      (matches ? accepted : rejected)++;
    }
  }
  // Both outcomes are well represented.
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(rejected, 1000);
}

TEST(NumberRangeTest, UnexpressibleBoundsAreErrors) {
  // Fractional bounds are enforced (json_schema_cases.json); bounds beyond
  // 1e15 or with more than 15 significant digits are not.
  for (const char* schema :
       {R"({"type":"number","maximum":1e16})", R"({"type":"number","maximum":0.1234567890123456})"}) {
    auto g = JsonSchemaToGrammar(schema);
    ASSERT_FALSE(g.ok()) << schema;
    EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(g.status().message().find("number bounds"), std::string::npos) << g.status().message();
  }
  // An empty interval matches nothing (a clear error for a lone schema).
  auto empty = JsonSchemaToGrammar(R"({"type":"number","minimum":3,"exclusiveMaximum":3})");
  ASSERT_TRUE(empty.ok());
  Deadline deadline(5.0);
  EXPECT_FALSE(BuildAutomaton(*empty, BuildLimits{}, deadline).ok());
}

}  // namespace
}  // namespace deepinfer::grammar
