#include "tokenizer/special_tokens.h"

namespace deepinfer {

namespace {
bool IsAsciiSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
}  // namespace

SpecialTokenMatcher::SpecialTokenMatcher(const TokenizerData& data) {
  const std::vector<std::string>& pieces = data.pieces;
  const std::vector<TokenType>& types = data.types;
  std::vector<uint32_t> node_of(pieces.size(), 0);  // id -> its terminal node (0: not matched)
  for (size_t id = 0; id < pieces.size(); ++id) {
    const TokenType type = types[id];
    if (type != TokenType::kControl && type != TokenType::kUserDefined && type != TokenType::kUnknown) {
      continue;
    }
    const std::string& piece = pieces[id];
    if (piece.empty()) continue;
    uint32_t node = 0;
    for (char c : piece) {
      const uint8_t byte = static_cast<uint8_t>(c);
      const uint64_t key = (static_cast<uint64_t>(node) << 8) | byte;
      auto [it, inserted] = children_.try_emplace(key, static_cast<uint32_t>(terminals_.size()));
      if (inserted) terminals_.emplace_back();
      node = it->second;
    }
    first_byte_[static_cast<uint8_t>(piece[0])] = true;
    // On duplicate texts the first id wins; a user-defined duplicate still
    // makes the text always-matched.
    Terminal& t = terminals_[node];
    if (t.token < 0) t.token = static_cast<int32_t>(id);
    t.always = t.always || type == TokenType::kUserDefined;
    node_of[id] = node;
  }
  for (int32_t id : data.lstrip_ids) terminals_[node_of[id]].lstrip = node_of[id] != 0;
  for (int32_t id : data.rstrip_ids) terminals_[node_of[id]].rstrip = node_of[id] != 0;
}

SpecialTokenMatcher::Match SpecialTokenMatcher::LongestAt(std::string_view text, size_t pos,
                                                          bool parse_special) const {
  Match best;
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(text[i]);
    auto it = children_.find(key);
    if (it == children_.end()) break;
    node = it->second;
    const Terminal& t = terminals_[node];
    if (t.token >= 0 && (parse_special || t.always)) best = Match{i + 1 - pos, node};
  }
  return best;
}

void SpecialTokenMatcher::Partition(std::string_view text, bool parse_special,
                                    std::vector<Fragment>* out) const {
  size_t raw_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const Match m = LongestAt(text, pos, parse_special);
    if (m.node == 0) {
      ++pos;
      continue;
    }
    const Terminal& t = terminals_[m.node];
    size_t raw_end = pos;
    if (t.lstrip) {
      while (raw_end > raw_start && IsAsciiSpace(text[raw_end - 1])) --raw_end;
    }
    if (raw_end > raw_start) out->push_back(Fragment{-1, text.substr(raw_start, raw_end - raw_start)});
    out->push_back(Fragment{t.token, {}});
    pos += m.length;
    if (t.rstrip) {
      while (pos < text.size() && IsAsciiSpace(text[pos])) ++pos;
    }
    raw_start = pos;
  }
  if (raw_start < text.size()) out->push_back(Fragment{-1, text.substr(raw_start)});
}

}  // namespace deepinfer
