#include "tokenizer/spm_bpe.h"

#include <cstdio>
#include <queue>
#include <string>

#include "tokenizer/unicode.h"

namespace deepinfer {

SpmBpeEncoder::SpmBpeEncoder(const TokenizerData& data, const PieceIndex& index)
    : data_(data), index_(index) {
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    int32_t id = FindPiece(index_, name);
    // llama.cpp falls back to a token that is the byte itself; we then use
    // <unk> rather than failing on vocabularies without byte tokens.
    if (id < 0) id = FindPiece(index_, std::string_view(reinterpret_cast<const char*>(&b), 1));
    if (id < 0) id = data_.unk_id;
    byte_tokens_[b] = id;
  }
}

namespace {

struct Symbol {
  uint32_t offset;  // into the escaped text
  uint32_t length;  // 0 once merged into its left neighbour
  int32_t prev;
  int32_t next;
};

struct Candidate {
  float score;
  int32_t left;
  int32_t right;
  uint32_t length;  // left.length + right.length when queued; stale if that changed
};

// Highest score first; on equal scores the leftmost pair first (llama.cpp).
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void SpmBpeEncoder::Encode(std::string_view fragment, bool add_space_prefix,
                           std::vector<int32_t>* out) const {
  std::string text;
  text.reserve(fragment.size() + 8);
  if (add_space_prefix) text.append(unicode::kSpmSpace);
  for (char c : fragment) {
    if (c == ' ') {
      text.append(unicode::kSpmSpace);
    } else {
      text.push_back(c);
    }
  }
  if (text.empty()) return;

  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len =
        std::min(unicode::Utf8SequenceLength(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{static_cast<uint32_t>(pos), static_cast<uint32_t>(len), index - 1,
                             pos + len == text.size() ? -1 : index + 1});
    pos += len;
  }

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t length = symbols[left].length + symbols[right].length;
    // Live neighbours are contiguous in `text`, so the pair is one slice.
    const int32_t id = FindPiece(index_, std::string_view(text).substr(symbols[left].offset, length));
    if (id < 0) return;
    const float score = data_.scores.empty() ? 0.0f : data_.scores[id];
    queue.push(Candidate{score, left, right, length});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    // Symbols only grow or die, so an unchanged total length means both are
    // still the ones that were paired.
    if (left.length == 0 || right.length == 0 || left.length + right.length != c.length) continue;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    try_add(left.prev, c.left);
    try_add(c.left, left.next);
  }

  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    EmitSymbol(std::string_view(text).substr(symbols[i].offset, symbols[i].length), out);
  }
}

// A surviving symbol is either a merged pair (always a token, since only
// token pairs merge) or one character, which may be missing from the
// vocabulary: then its bytes are emitted as byte tokens.
void SpmBpeEncoder::EmitSymbol(std::string_view text, std::vector<int32_t>* out) const {
  const int32_t id = FindPiece(index_, text);
  if (id >= 0) {
    out->push_back(id);
    return;
  }
  for (char c : text) {
    const int32_t byte_id = byte_tokens_[static_cast<uint8_t>(c)];
    if (byte_id >= 0) out->push_back(byte_id);
  }
}

}  // namespace deepinfer
