// UTF-8 encoding shared by the tokenizer, the grammar engine and synth.
#pragma once

#include <cstdint>
#include <string>

namespace deepinfer {

// Appends the UTF-8 encoding of code point `cp` (<= 0x10FFFF) to *out.
// Surrogates are encoded as-is; callers that must exclude them check first.
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace deepinfer
