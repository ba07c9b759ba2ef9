#include "grammar/position_mask.h"

#include <algorithm>

namespace deepinfer::grammar {

namespace {

// Collects the three classes; flushes accepted to the cheaper form.
class Classifier {
 public:
  explicit Classifier(const Vocabulary& vocab) : vocab_(vocab) {}
  void Accept(uint32_t sorted_index) { accepted_.push_back(vocab_.sorted_ids()[sorted_index]); }
  void Uncertain(uint32_t sorted_index) { out_.uncertain.push_back(sorted_index); }
  PositionMask Finish() {
    // An id list costs 4 bytes a token, the bitset 1/8 byte per vocab entry.
    if (accepted_.size() * 32 > vocab_.size()) {
      out_.accepted_bits.assign(vocab_.mask_words(), 0);
      for (int32_t id : accepted_) out_.accepted_bits[id >> 5] |= 1u << (id & 31);
    } else {
      std::sort(accepted_.begin(), accepted_.end());
      out_.accepted_ids = std::move(accepted_);
    }
    return std::move(out_);
  }

 private:
  const Vocabulary& vocab_;
  std::vector<int32_t> accepted_;
  PositionMask out_;
};

// Terminal rule: walk the sorted vocabulary with the dense DFA table.
PositionMask ComputeDense(const GrammarAutomaton& a, const Vocabulary& vocab, uint32_t start) {
  Classifier out(vocab);
  const auto& ids = vocab.sorted_ids();
  const auto& lcp = vocab.sorted_lcp();
  std::vector<uint32_t> states(vocab.max_token_length() + 1);
  // ended[d]: the rule could end after d bytes for some 1 <= d' <= d.
  std::vector<uint8_t> ended(vocab.max_token_length() + 1, 0);
  states[0] = start;
  size_t depth = 0;
  bool failed = false;
  for (uint32_t i = 0; i < ids.size(); ++i) {
    std::string_view tok = vocab.sorted_token(i);
    size_t shared = lcp[i];
    if (failed && shared > depth) {  // same failing byte as the previous token
      if (ended[depth]) out.Uncertain(i);
      continue;
    }
    depth = std::min(depth, shared);
    failed = false;
    while (depth < tok.size()) {
      uint32_t next = a.DenseNext(states[depth], static_cast<uint8_t>(tok[depth]));
      if (next == kNoState) {
        failed = true;
        break;
      }
      states[depth + 1] = next;
      ended[depth + 1] = ended[depth] || a.is_final[next];
      ++depth;
    }
    if (!failed) {
      out.Accept(i);
    } else if (ended[depth]) {
      out.Uncertain(i);
    }
  }
  return out.Finish();
}

// General rule: the same walk with the Earley parser in sentinel mode.
PositionMask ComputeEarley(const Vocabulary& vocab, uint32_t start, EarleyParser* parser) {
  Classifier out(vocab);
  const auto& ids = vocab.sorted_ids();
  const auto& lcp = vocab.sorted_lcp();
  std::vector<uint8_t> ended(vocab.max_token_length() + 1, 0);
  parser->ResetAtState(start);
  size_t depth = 0;
  bool failed = false;
  for (uint32_t i = 0; i < ids.size(); ++i) {
    std::string_view tok = vocab.sorted_token(i);
    size_t shared = lcp[i];
    if (failed && shared > depth) {
      if (ended[depth]) out.Uncertain(i);
      continue;
    }
    depth = std::min(depth, shared);
    parser->PopTo(depth + 1);
    failed = false;
    while (depth < tok.size()) {
      if (!parser->Advance(static_cast<uint8_t>(tok[depth]))) {
        failed = true;
        break;
      }
      ended[depth + 1] = ended[depth] || parser->SentinelCompleted();
      ++depth;
    }
    if (!failed) {
      out.Accept(i);
    } else if (ended[depth]) {
      out.Uncertain(i);
    }
  }
  return out.Finish();
}

}  // namespace

PositionMask ComputePositionMask(const GrammarAutomaton& a, const Vocabulary& vocab, uint32_t state,
                                 EarleyParser* scratch) {
  if (a.dense_offset[state] != kNoState) return ComputeDense(a, vocab, state);
  return ComputeEarley(vocab, state, scratch);
}

}  // namespace deepinfer::grammar
