#include "grammar/utf8.h"

#include <algorithm>

namespace deepinfer::grammar {

bool DecodeUtf8(std::string_view s, size_t* pos, uint32_t* cp) {
  size_t i = *pos;
  if (i >= s.size()) return false;
  uint8_t b0 = static_cast<uint8_t>(s[i]);
  int len;
  uint32_t value;
  if (b0 < 0x80) {
    len = 1;
    value = b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    value = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    value = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    value = b0 & 0x07;
  } else {
    return false;
  }
  if (i + len > s.size()) return false;
  for (int k = 1; k < len; ++k) {
    uint8_t b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xC0) != 0x80) return false;
    value = (value << 6) | (b & 0x3F);
  }
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kMin[len] || value > kMaxCodepoint || (value >= 0xD800 && value <= 0xDFFF)) {
    return false;
  }
  *cp = value;
  *pos = i + len;
  return true;
}

std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges) {
  std::vector<CodepointRange> out;
  for (auto& r : ranges) r.hi = std::min(r.hi, kMaxCodepoint);
  std::sort(ranges.begin(), ranges.end(), [](CodepointRange a, CodepointRange b) { return a.lo < b.lo; });
  for (CodepointRange r : ranges) {
    if (r.lo > r.hi) continue;
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<CodepointRange> ComplementRanges(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> in = NormalizeRanges(ranges), out;
  uint32_t next = 0;
  for (CodepointRange r : in) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return out;
}

namespace {

int EncodedLength(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// Splits [lo, hi] (same encoded length) until each piece is a product of
// per-byte ranges, then emits one byte-range sequence per piece. Depth is
// bounded by the 4-byte encoding, not by the input.
void SplitSameLength(Grammar* g, uint32_t lo, uint32_t hi, std::vector<ExprId>* out) {
  int n = EncodedLength(lo);
  for (int i = 1; i < n; ++i) {
    uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        SplitSameLength(g, lo, lo | m, out);
        SplitSameLength(g, (lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        SplitSameLength(g, lo, (hi & ~m) - 1, out);
        SplitSameLength(g, hi & ~m, hi, out);
        return;
      }
    }
  }
  std::string a, b;
  AppendUtf8(lo, &a);
  AppendUtf8(hi, &b);
  std::vector<ExprId> seq;
  for (size_t k = 0; k < a.size(); ++k) {
    seq.push_back(g->Bytes({{static_cast<uint8_t>(a[k]), static_cast<uint8_t>(b[k])}}));
  }
  out->push_back(g->Sequence(std::move(seq)));
}

}  // namespace

ExprId Utf8Class(Grammar* g, const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> rs = NormalizeRanges(ranges);
  std::vector<ExprId> alts;
  std::vector<ByteRange> ascii;
  static const uint32_t kBounds[][2] = {
      {0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xD7FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
  for (CodepointRange r : rs) {
    for (const auto& bound : kBounds) {
      uint32_t lo = std::max(r.lo, bound[0]), hi = std::min(r.hi, bound[1]);
      if (lo > hi) continue;
      if (hi < 0x80) {
        ascii.push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)});
      } else {
        SplitSameLength(g, lo, hi, &alts);
      }
    }
  }
  if (!ascii.empty()) alts.insert(alts.begin(), g->Bytes(std::move(ascii)));
  return g->Choice(std::move(alts));
}

ExprId JsonEscapedClass(Grammar* g, const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> rs = NormalizeRanges(ranges);
  std::vector<CodepointRange> plain;
  std::vector<ExprId> alts;
  auto hex_digit = [&](int v) {
    const char* digits = "0123456789abcdef";
    char lower = digits[v];
    char upper = static_cast<char>(lower >= 'a' ? lower - 32 : lower);
    return g->Bytes({{static_cast<uint8_t>(lower), static_cast<uint8_t>(lower)},
                     {static_cast<uint8_t>(upper), static_cast<uint8_t>(upper)}});
  };
  for (CodepointRange r : rs) {
    for (uint32_t c = r.lo; c <= std::min<uint32_t>(r.hi, 0x1F); ++c) {
      std::vector<ExprId> forms;
      const char* short_form = nullptr;
      switch (c) {
        case '\b':
          short_form = "\\b";
          break;
        case '\f':
          short_form = "\\f";
          break;
        case '\n':
          short_form = "\\n";
          break;
        case '\r':
          short_form = "\\r";
          break;
        case '\t':
          short_form = "\\t";
          break;
        default:
          break;
      }
      if (short_form) forms.push_back(g->Literal(short_form));
      forms.push_back(g->Sequence(
          {g->Literal("\\u00"), hex_digit(static_cast<int>(c >> 4)), hex_digit(static_cast<int>(c & 15))}));
      alts.push_back(g->Choice(std::move(forms)));
    }
    if (r.hi < 0x20) continue;
    uint32_t lo = std::max<uint32_t>(r.lo, 0x20);
    // Split out '"' (0x22) and '\' (0x5C).
    for (uint32_t special : {0x22u, 0x5Cu}) {
      if (lo <= special && special <= r.hi) {
        if (special > lo) plain.push_back({lo, special - 1});
        alts.push_back(g->Literal(special == 0x22 ? "\\\"" : "\\\\"));
        lo = special + 1;
      }
    }
    if (lo <= r.hi) plain.push_back({lo, r.hi});
  }
  if (!plain.empty()) alts.insert(alts.begin(), Utf8Class(g, plain));
  return g->Choice(std::move(alts));
}

}  // namespace deepinfer::grammar
