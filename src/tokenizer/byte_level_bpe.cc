#include "tokenizer/byte_level_bpe.h"

#include <queue>

#include "core/log.h"
#include "tokenizer/unicode.h"

namespace deepinfer {

StatusOr<std::unique_ptr<ByteLevelBpeEncoder>> ByteLevelBpeEncoder::Create(const TokenizerData& data,
                                                                           const PieceIndex& index) {
  std::vector<PreTokenizerStep> steps = data.pre_steps;
  if (steps.empty()) {
    DI_ASSIGN_OR_RETURN(steps, PreTokenizer::StepsForGgufPre(data.pre));
  }
  DI_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::Create(steps));
  std::unique_ptr<ByteLevelBpeEncoder> enc(new ByteLevelBpeEncoder(index, std::move(pre)));
  enc->ignore_merges_ = data.ignore_merges;
  enc->types_ = &data.types;
  for (int b = 0; b < 256; ++b) {
    enc->byte_tokens_[b] = FindPiece(index, unicode::ByteLevelEncode(std::string(1, static_cast<char>(b))));
  }

  enc->merges_.Reserve(data.merges.size());
  size_t skipped = 0;
  std::string joined;
  for (size_t rank = 0; rank < data.merges.size(); ++rank) {
    const std::string& merge = data.merges[rank];
    // The separator is the first space after the first character (as llama.cpp
    // splits them), so a left part can never be empty.
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos || space + 1 >= merge.size()) {
      return InvalidArgument("merges[" + std::to_string(rank) + "] '" + merge + "': expected \"left right\"");
    }
    const std::string_view left = std::string_view(merge).substr(0, space);
    const std::string_view right = std::string_view(merge).substr(space + 1);
    joined.assign(left);
    joined.append(right);
    const int32_t a = FindPiece(index, left), b = FindPiece(index, right), result = FindPiece(index, joined);
    if (a < 0 || b < 0 || result < 0) {
      // HF refuses such files; llama.cpp would apply the merge and then lose
      // the bytes of the resulting non-token. Skipping it keeps every byte
      // encodable.
      ++skipped;
      continue;
    }
    // The first (lowest) rank of a duplicated pair wins.
    enc->merges_.Insert(a, b, MergeTable::Merge{static_cast<int32_t>(rank), result});
  }
  if (skipped > 0) DI_LOG_DEBUG("tokenizer: skipped %zu merges whose parts are not tokens", skipped);
  return enc;
}

void ByteLevelBpeEncoder::Encode(std::string_view text, std::vector<int32_t>* out) const {
  for (const std::string& word : pre_.Run(text)) EncodeWord(word, out);
}

namespace {

struct Symbol {
  int32_t id;  // -1: a character that is not a token (never merges)
  int32_t prev;
  int32_t next;
  bool alive;
};

struct Candidate {
  int32_t rank;
  int32_t left, right;
  int32_t left_id, right_id;  // ids when queued; stale if either changed
  int32_t result;
};

// Lowest rank first; on equal ranks the leftmost pair.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

void ByteLevelBpeEncoder::EncodeWord(const std::string& word, std::vector<int32_t>* out) const {
  if (ignore_merges_) {
    // Only model-vocabulary tokens: an added token's text never comes out of
    // plain text here (HF looks the word up in the model vocabulary alone).
    const int32_t whole = FindPiece(index_, word);
    if (whole >= 0 && (*types_)[whole] == TokenType::kNormal) {
      out->push_back(whole);
      return;
    }
  }

  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t pos = 0; pos < word.size();) {
    const size_t start = pos;
    uint32_t cp = 0;
    int32_t id = -1;
    if (unicode::DecodeUtf8(word, &pos, &cp)) {
      const int byte = unicode::CodepointToByte(cp);
      id = byte >= 0 ? byte_tokens_[byte]
                     : FindPiece(index_, std::string_view(word).substr(start, pos - start));
    }
    const int32_t i = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, i - 1, i + 1, true});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t a = symbols[left].id, b = symbols[right].id;
    if (a < 0 || b < 0) return;
    const MergeTable::Merge* merge = merges_.Find(a, b);
    if (merge == nullptr) return;
    queue.push(Candidate{merge->rank, left, right, a, b, merge->result});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    // A merged symbol always gets a longer token, so an unchanged id pair
    // means the pair is still intact.
    if (!left.alive || !right.alive || left.next != c.right || left.id != c.left_id ||
        right.id != c.right_id) {
      continue;
    }
    left.id = c.result;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    try_add(left.prev, c.left);
    try_add(c.left, left.next);
  }

  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    if (symbols[i].id >= 0) out->push_back(symbols[i].id);
  }
}

}  // namespace deepinfer
