// UTF-8 helpers for the front ends: code-point classes -> byte-level IR.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

struct CodepointRange {
  uint32_t lo;
  uint32_t hi;  // inclusive
};

using ::deepinfer::AppendUtf8;
// Decodes one code point at *pos and advances it; false on malformed input.
bool DecodeUtf8(std::string_view s, size_t* pos, uint32_t* cp);

// Sorted, merged, clipped to [0, kMaxCodepoint].
std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges);
// Complement within all Unicode scalar values.
std::vector<CodepointRange> ComplementRanges(const std::vector<CodepointRange>& ranges);

// Expression matching the UTF-8 encoding of any one code point in `ranges`
// (surrogates U+D800..U+DFFF are never encoded). kNothing if empty.
ExprId Utf8Class(Grammar* g, const std::vector<CodepointRange>& ranges);

// Same, but as the text appears inside a JSON string literal: '"' and '\'
// and control characters are written as JSON escapes (short forms where
// JSON has them, else \u00XX with either hex case).
ExprId JsonEscapedClass(Grammar* g, const std::vector<CodepointRange>& ranges);

}  // namespace deepinfer::grammar
