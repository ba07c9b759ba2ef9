#include "tokenizer/unicode.h"

#include <array>

namespace deepinfer::unicode {

size_t Utf8SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

namespace {

// Number of bytes of a well-formed sequence that `s` starts with (Unicode
// Table 3-7), 0 if the first bytes are ill-formed; `*needed` receives the
// full length the lead byte asks for and `*good` how many leading bytes are
// consistent with a well-formed sequence.
void CheckSequence(std::string_view s, size_t* needed, size_t* good) {
  const uint8_t b0 = static_cast<uint8_t>(s[0]);
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 < 0x80) {
    *needed = 1;
    *good = 1;
    return;
  }
  // One branch per row of the UTF-8 table (RFC 3629): some rows share a body.
  // NOLINTBEGIN(bugprone-branch-clone)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    *needed = 2;
  } else if (b0 == 0xE0) {
    *needed = 3;
    lo = 0xA0;
  } else if (b0 >= 0xE1 && b0 <= 0xEC) {
    *needed = 3;
  } else if (b0 == 0xED) {
    *needed = 3;
    hi = 0x9F;
  } else if (b0 >= 0xEE && b0 <= 0xEF) {
    *needed = 3;
  } else if (b0 == 0xF0) {
    *needed = 4;
    lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    *needed = 4;
  } else if (b0 == 0xF4) {
    *needed = 4;
    hi = 0x8F;
  } else {
    *needed = 1;
    *good = 0;
    return;
  }  // C0, C1, F5..FF, or a continuation byte
  // NOLINTEND(bugprone-branch-clone)
  size_t i = 1;
  for (; i < *needed && i < s.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(s[i]);
    const uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h) break;
  }
  *good = i;
}

}  // namespace

bool DecodeUtf8(std::string_view text, size_t* pos, uint32_t* cp) {
  size_t needed = 0, good = 0;
  std::string_view s = text.substr(*pos);
  CheckSequence(s, &needed, &good);
  if (good != needed) {
    *pos += 1;
    return false;
  }
  const uint8_t b0 = static_cast<uint8_t>(s[0]);
  uint32_t v = needed == 1 ? b0 : needed == 2 ? (b0 & 0x1F) : needed == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t i = 1; i < needed; ++i) v = (v << 6) | (static_cast<uint8_t>(s[i]) & 0x3F);
  *cp = v;
  *pos += needed;
  return true;
}

Utf8Scan ScanUtf8(std::string_view bytes) {
  Utf8Scan scan;
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t needed = 0, good = 0;
    CheckSequence(bytes.substr(pos), &needed, &good);
    if (good == needed) {
      pos += needed;
      continue;
    }
    scan.valid_prefix = pos;
    if (pos + good == bytes.size() && good > 0) return scan;  // incomplete tail
    scan.invalid_bytes = good == 0 ? 1 : good;                // maximal invalid subpart
    return scan;
  }
  scan.valid_prefix = pos;
  return scan;
}

namespace {

struct ByteTables {
  std::array<uint32_t, 256> byte_to_cp{};
  std::array<int16_t, 324> cp_to_byte{};  // all alphabet code points are < 0x144
  ByteTables() {
    cp_to_byte.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byte_to_cp[b] = printable ? b : 256 + next++;
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& Tables() {
  static const ByteTables tables;
  return tables;
}

}  // namespace

uint32_t ByteToCodepoint(uint8_t byte) { return Tables().byte_to_cp[byte]; }

int CodepointToByte(uint32_t cp) {
  const auto& t = Tables().cp_to_byte;
  return cp < t.size() ? t[cp] : -1;
}

std::string ByteLevelEncode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) AppendUtf8(ByteToCodepoint(static_cast<uint8_t>(c)), &out);
  return out;
}

std::string ByteLevelDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    uint32_t cp = 0;
    if (DecodeUtf8(text, &pos, &cp)) {
      const int b = CodepointToByte(cp);
      if (b >= 0) {
        out.push_back(static_cast<char>(b));
        continue;
      }
    }
    out.append(text.substr(start, pos - start));
  }
  return out;
}

}  // namespace deepinfer::unicode
