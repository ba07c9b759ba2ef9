// UTF-8 helpers and the GPT-2 byte-level alphabet, shared by the encoders,
// Decode and the incremental detokenizer. Internal to src/tokenizer.
// All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace deepinfer::unicode {

// Length that a UTF-8 sequence starting with `lead` claims (1..4). Invalid
// lead bytes (continuation bytes, 0xF8..0xFF) count as 1 so that callers that
// walk text by "characters" always advance and never read past the end.
size_t Utf8SequenceLength(uint8_t lead);

// Appends the UTF-8 encoding of code point `cp` (must be <= 0x10FFFF).
using ::deepinfer::AppendUtf8;

// Decodes the code point starting at text[*pos] and advances *pos past it.
// Returns false (and advances by one byte) on an invalid or truncated sequence.
bool DecodeUtf8(std::string_view text, size_t* pos, uint32_t* cp);

// Result of scanning a byte string for UTF-8 validity from the start.
struct Utf8Scan {
  size_t valid_prefix = 0;   // bytes [0, valid_prefix) are complete, valid UTF-8
  size_t invalid_bytes = 0;  // bytes after the prefix that can never become valid (0 if none)
  // When invalid_bytes == 0 and valid_prefix < size: the tail is an incomplete
  // but so-far-valid sequence that more bytes may complete.
};
// Scans `bytes` up to the first problem: either a definitely invalid sequence
// (its maximal invalid subpart, as in Unicode's "U+FFFD substitution of maximal
// subparts") or an incomplete tail.
Utf8Scan ScanUtf8(std::string_view bytes);

// GPT-2 byte-level alphabet: every byte maps to one printable code point
// (printable Latin-1 bytes map to themselves, the rest to U+0100 + n).
uint32_t ByteToCodepoint(uint8_t byte);
// Inverse of ByteToCodepoint; -1 for code points outside the alphabet.
int CodepointToByte(uint32_t cp);
// Maps every byte of `bytes` to its alphabet code point, UTF-8 encoded.
std::string ByteLevelEncode(std::string_view bytes);
// Inverse of ByteLevelEncode. Code points outside the alphabet (e.g. in a
// hand-made vocabulary) are kept as their own UTF-8 bytes.
std::string ByteLevelDecode(std::string_view text);

// SentencePiece meta symbol U+2581 ("▁"), which stands for a space.
inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

}  // namespace deepinfer::unicode
