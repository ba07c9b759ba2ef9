#include "grammar/position_mask.h"

#include <algorithm>

namespace deepinfer::grammar {

namespace {

constexpr size_t kLoopCheckDepth = 3;

// Collects the three classes; flushes accepted to the cheaper form.
// Accepted tokens go straight into a bitset (16 KB for 128k tokens, stays
// in L1/L2): an id vector of ~120k entries would cost reallocations and
// page faults on every first visit of a broad position.
class Classifier {
 public:
  explicit Classifier(const Vocabulary& vocab)
      : vocab_(vocab), ids_(vocab.sorted_ids().data()), bits_(vocab.size()) {}
  void Accept(uint32_t sorted_index) {
    int32_t id = ids_[sorted_index];
    num_accepted_ += !bits_.Test(id);
    bits_.Set(id);
  }
  void AcceptId(int32_t id) {
    num_accepted_ += !bits_.Test(id);
    bits_.Set(id);
  }
  void Reject(uint32_t sorted_index) {
    int32_t id = ids_[sorted_index];
    num_accepted_ -= bits_.Test(id);
    bits_.Clear(id);
  }
  // ORs in a token-id bitset over the same vocabulary, counting the new ids.
  void AcceptBits(const TokenBitmask& bits) {
    uint32_t* dst = bits_.words();
    const uint32_t* src = bits.words();
    for (size_t w = 0, n = bits_.num_words(); w < n; ++w) {
      num_accepted_ += __builtin_popcount(src[w] & ~dst[w]);
      dst[w] |= src[w];
    }
  }
  void Uncertain(uint32_t sorted_index) { out_.uncertain.push_back(sorted_index); }
  PositionMask Finish() {
    // An id list costs 4 bytes a token, the bitset 1/8 byte per vocab entry.
    if (num_accepted_ * 32 > vocab_.size()) {
      out_.accepted_bits = std::move(bits_);
    } else {
      out_.accepted_ids.reserve(num_accepted_);
      bits_.ForEachSet([&](int32_t id) { out_.accepted_ids.push_back(id); });
    }
    return std::move(out_);
  }

 private:
  const Vocabulary& vocab_;
  const int32_t* ids_;
  TokenBitmask bits_;
  size_t num_accepted_ = 0;
  PositionMask out_;
};
// True if every byte in `below` (256 bits) loops on `state`.
bool AllLoop(const GrammarAutomaton& a, uint32_t state, const uint64_t* below) {
  const uint64_t* loop = a.DenseLoop(state);
  return ((below[0] & ~loop[0]) | (below[1] & ~loop[1]) | (below[2] & ~loop[2]) | (below[3] & ~loop[3])) == 0;
}

// Terminal rule: walk the sorted tokens [lo, hi) (a trie subtree or the
// whole vocabulary, in preorder) with the dense DFA table. Two shortcuts keep
// a first visit cheap on big vocabularies: a failing byte skips its whole
// subtree (trie node ranges), and near the root a subtree whose remaining
// bytes all loop on the current state (e.g. plain characters inside a
// string) is accepted as a range. lcp[lo] must be 0 within the range (lo
// starts a first-byte range or the vocabulary).
void DenseWalk(const GrammarAutomaton& a, const Vocabulary& vocab, uint32_t start, uint32_t lo, uint32_t hi,
               Classifier* out) {
  const auto& lcp = vocab.sorted_lcp();
  const size_t max_len = vocab.max_token_length();
  std::vector<uint32_t> states(max_len + 1);
  // ended[d]: the rule could end after d bytes for some 1 <= d' <= d.
  std::vector<uint8_t> ended(max_len + 1, 0);
  states[0] = start;
  size_t depth = 0;
  bool failed = false;
  for (uint32_t i = lo; i < hi; ++i) {
    std::string_view tok = vocab.sorted_token(i);
    size_t shared = i == lo ? 0 : lcp[i];
    if (failed && shared > depth) {  // same failing byte as the previous token
      if (ended[depth]) out->Uncertain(i);
      continue;
    }
    depth = std::min(depth, shared);
    failed = false;
    bool decided = false;
    while (depth < tok.size()) {
      uint32_t next = a.DenseNext(states[depth], static_cast<uint8_t>(tok[depth]));
      if (next == kNoState) {
        failed = true;
        break;
      }
      states[depth + 1] = next;
      ended[depth + 1] = ended[depth] || a.is_final[next];
      ++depth;
      // Near the root, where subtrees are big: if every byte below this
      // node loops on `next`, every token of the subtree ends in `next`:
      // all accepted. (Deeper checks would cost more cache misses than
      // they save.) depth > lcp[i]: the prefix is a node of token i.
      if (depth > kLoopCheckDepth) continue;
      // A state without self-loops (e.g. every state of a counted string)
      // cannot accept a subtree this way: skip the trie-node lookups.
      const uint64_t* loop = a.DenseLoop(next);
      if ((loop[0] | loop[1] | loop[2] | loop[3]) == 0) continue;
      uint32_t node = vocab.node(i, depth);
      uint32_t end = vocab.node_end(node);
      if (end - i < 8 || !AllLoop(a, next, vocab.node_bytes_below(node))) continue;
      for (uint32_t j = i; j < end; ++j) out->Accept(j);
      i = end - 1;
      decided = true;
      break;
    }
    if (decided) continue;
    if (!failed) {
      out->Accept(i);
    } else {
      // Every token sharing the failing byte fails there too.
      uint32_t end = vocab.node_end(vocab.node(i, depth + 1));
      for (uint32_t j = i; j < end; ++j) {
        if (ended[depth]) out->Uncertain(j);
      }
      i = end - 1;
    }
  }
}

PositionMask ComputeDense(const GrammarAutomaton& a, const Vocabulary& vocab, uint32_t start) {
  Classifier out(vocab);
  DenseWalk(a, vocab, start, 0, static_cast<uint32_t>(vocab.sorted_ids().size()), &out);
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
    } else {
      uint32_t end = vocab.node_end(vocab.node(i, depth + 1));
      for (uint32_t j = i; j < end; ++j) {
        if (ended[depth]) out.Uncertain(j);
      }
      i = end - 1;
    }
  }
  return out.Finish();
}

}  // namespace

PositionMask ComputeCountedMask(const StringProfiles& profiles, uint32_t u, int64_t count, int64_t min,
                                int64_t max) {
  const StringProfile& p = profiles.Get(u);
  const int64_t room = max - count;  // characters that may still start
  const int64_t need = min - count;  // characters before the quote may close
  Classifier out(profiles.vocab());
  if (room < 0) return out.Finish();
  out.AcceptBits(p.inside_upto[std::min<int64_t>(room, StringProfile::kShortChars)]);
  for (uint32_t j : p.inside_long) {
    if (p.chars(j) <= room) out.Accept(j);
  }
  for (uint32_t j : p.closes_at_end) {
    if (p.chars(j) <= room && p.chars(j) >= need) out.Accept(j);
  }
  for (uint32_t j : p.closes_early) {
    if (p.chars(j) <= room && p.chars(j) >= need) out.Uncertain(j);
  }
  return out.Finish();
}

PositionMask ComputeInsideMask(const GrammarAutomaton& a, const StringProfiles& profiles, uint32_t state,
                               uint32_t u, const std::vector<uint8_t>& walk_first_byte, int64_t chars_left,
                               int64_t slack) {
  const StringProfile& p = profiles.Get(u);
  const Vocabulary& vocab = profiles.vocab();
  const std::vector<uint32_t>& special = profiles.special_tokens();
  Classifier out(vocab);
  // Tokens under a walked or refused first byte are decided by the walk
  // alone. When they are most of the vocabulary (a format or pattern ∩
  // length whose states differ from U inside most tokens: uri, email,
  // uri-reference), ORing in the profile word-wise and then clearing them
  // one by one cost more than the walk (~2/3 of such a first visit on
  // llama3, perf): then only the profile-read ranges are copied, token by
  // token, and the walked ranges start clear. Same mask either way.
  size_t walked = 0;
  for (int b = 0; b < 256; ++b) {
    if (walk_first_byte[b] != kFromProfile)
      walked += profiles.first_byte_begin(b + 1) - profiles.first_byte_begin(b);
  }
  const bool copy_ranges = walked * 2 > vocab.sorted_ids().size();
  // Sorted tokens all have a first byte; the profile holds sorted tokens only.
  auto from_profile = [&](std::string_view tok) {
    return !copy_ranges || walk_first_byte[static_cast<uint8_t>(tok[0])] == kFromProfile;
  };
  // Every token that stays inside the string from u (within the characters
  // left, less the slack); the walked ranges and the special tokens are
  // re-decided below.
  const int64_t sure = chars_left - slack;
  if (sure >= 0) {
    const TokenBitmask& inside = p.inside_upto[std::min<int64_t>(sure, StringProfile::kShortChars)];
    if (copy_ranges) {
      const std::vector<int32_t>& ids = vocab.sorted_ids();
      for (int b = 0; b < 256; ++b) {
        if (walk_first_byte[b] != kFromProfile) continue;
        for (uint32_t j = profiles.first_byte_begin(b); j < profiles.first_byte_begin(b + 1); ++j) {
          if (inside.Test(ids[j])) out.Accept(j);
        }
      }
    } else {
      out.AcceptBits(inside);
    }
    for (uint32_t j : p.inside_long) {
      if (p.chars(j) <= sure && from_profile(vocab.sorted_token(j))) out.Accept(j);
    }
  }
  // Within the slack a refusal may come: those tokens (the ones without
  // special bytes; the others are run below anyway) are run through the
  // automaton, in sorted order so that runs share prefixes (a state per
  // depth, kept up to the common prefix with the last run token). Run one
  // by one in id order they cost ~0.1 us each on llama3 (~8k tokens of
  // 11-20 characters when 20 are left with a slack of 10), most of it
  // stepping the same prefixes again.
  if (slack > 0) {
    const int64_t hi = std::min<int64_t>(chars_left, StringProfile::kShortChars);
    // The candidates, marked by sorted index.
    TokenBitmask to_run(vocab.sorted_ids().size());
    size_t num_to_run = 0;
    for (int64_t k = std::max<int64_t>(sure + 1, 0); k <= hi; ++k) {
      const uint32_t* now = p.inside_upto[k].words();
      const uint32_t* before = k > 0 ? p.inside_upto[k - 1].words() : nullptr;
      for (size_t w = 0, nw = p.inside_upto[k].num_words(); w < nw; ++w) {
        uint32_t bits = now[w] & ~(before ? before[w] : 0u);
        while (bits != 0) {
          int32_t id = static_cast<int32_t>(w * 32 + static_cast<size_t>(__builtin_ctz(bits)));
          bits &= bits - 1;
          to_run.Set(static_cast<int32_t>(profiles.sorted_index(id)));
          ++num_to_run;
        }
      }
    }
    for (uint32_t j : p.inside_long) {
      if (p.chars(j) > sure && p.chars(j) <= chars_left) {
        to_run.Set(static_cast<int32_t>(j));
        ++num_to_run;
      }
    }
    std::vector<uint32_t> states(vocab.max_token_length() + 1);
    states[0] = state;
    std::string_view last;  // the last run token; states[0..valid] are its prefix's
    size_t valid = 0;
    if (num_to_run > 0) {
      to_run.ForEachSet([&](int32_t sorted) {
        const uint32_t j = static_cast<uint32_t>(sorted);
        std::string_view tok = vocab.sorted_token(j);
        if (!from_profile(tok)) return;
        size_t d = 0;
        const size_t common = std::min({valid, tok.size(), last.size()});
        while (d < common && tok[d] == last[d]) ++d;
        for (; d < tok.size(); ++d) {
          const uint8_t b = static_cast<uint8_t>(tok[d]);
          if (IsStringSpecialByte(b)) break;
          const uint32_t next = a.DenseNext(states[d], b);
          if (next == kNoState) break;
          states[d + 1] = next;
        }
        last = tok;
        valid = d;
        if (d == tok.size()) out.Accept(j);
      });
    }
  }
  size_t next_special = 0;
  // First bytes in ascending order keep `uncertain` sorted.
  for (int b = 0; b < 256; ++b) {
    uint32_t lo = profiles.first_byte_begin(b), hi = profiles.first_byte_begin(b + 1);
    if (walk_first_byte[b] != kFromProfile) {
      if (!copy_ranges) {
        for (uint32_t j = lo; j < hi; ++j) out.Reject(j);
      }
      if (walk_first_byte[b] == kWalk) DenseWalk(a, vocab, state, lo, hi, &out);
      while (next_special < special.size() && special[next_special] < hi) ++next_special;
      continue;
    }
    // A special token: one plain run from `state`, classified as DenseWalk
    // classifies a token.
    for (; next_special < special.size() && special[next_special] < hi; ++next_special) {
      uint32_t j = special[next_special];
      std::string_view tok = vocab.sorted_token(j);
      uint32_t s = state;
      bool ended = false;
      size_t d = 0;
      for (; d < tok.size(); ++d) {
        uint32_t next = a.DenseNext(s, static_cast<uint8_t>(tok[d]));
        if (next == kNoState) break;
        s = next;
        ended = ended || a.is_final[s];
      }
      if (d == tok.size()) {
        out.Accept(j);
      } else {
        out.Reject(j);
        if (ended) out.Uncertain(j);
      }
    }
  }
  return out.Finish();
}

PositionMask ComputeClassTrieMask(const GrammarAutomaton& a, const Vocabulary& vocab,
                                  const ByteClassTrie& trie, uint32_t state) {
  Classifier out(vocab);
  const ByteClasses& classes = trie.classes();
  const std::vector<uint8_t>& byte_of = classes.representative;
  std::vector<uint32_t> states(vocab.max_token_length() + 1);
  std::vector<uint8_t> ended(vocab.max_token_length() + 1, 0);  // as in DenseWalk
  std::vector<uint32_t> uncertain;
  states[0] = state;
  for (uint32_t n = 1; n < trie.num_nodes(); ++n) {
    const uint16_t d = trie.node_depth(n);
    if (trie.node_class(n) == classes.run_class) {
      // Past a backslash the partition does not hold (escape states):
      // every token of the subtree is run byte by byte from depth d - 1,
      // classified as DenseWalk classifies it.
      uint32_t skip = trie.subtree_end(n);
      for (uint32_t k = trie.token_begin(n); k < trie.token_begin(skip); ++k) {
        std::string_view tok = vocab.sorted_token(trie.token(k));
        uint32_t s = states[d - 1];
        bool end = ended[d - 1];
        size_t i = d - 1;
        for (; i < tok.size(); ++i) {
          uint32_t next = a.DenseNext(s, static_cast<uint8_t>(tok[i]));
          if (next == kNoState) break;
          s = next;
          end = end || a.is_final[s];
        }
        if (i == tok.size()) {
          out.Accept(trie.token(k));
        } else if (end) {
          uncertain.push_back(trie.token(k));
        }
      }
      n = skip - 1;
      continue;
    }
    uint32_t next = a.DenseNext(states[d - 1], byte_of[trie.node_class(n)]);
    if (next == kNoState) {  // every token of the subtree fails here
      uint32_t skip = trie.subtree_end(n);
      if (ended[d - 1]) {
        for (uint32_t k = trie.token_begin(n); k < trie.token_begin(skip); ++k) {
          uncertain.push_back(trie.token(k));
        }
      }
      n = skip - 1;
      continue;
    }
    states[d] = next;
    ended[d] = ended[d - 1] || a.is_final[next];
    for (uint32_t k = trie.token_begin(n); k < trie.token_begin(n + 1); ++k) out.Accept(trie.token(k));
  }
  // Class order is not byte order: restore ascending sorted indices.
  std::sort(uncertain.begin(), uncertain.end());
  for (uint32_t j : uncertain) out.Uncertain(j);
  return out.Finish();
}

PositionMask ComputePositionMask(const GrammarAutomaton& a, const Vocabulary& vocab, uint32_t state,
                                 EarleyParser* scratch) {
  if (a.dense_offset[state] != kNoState) return ComputeDense(a, vocab, state);
  return ComputeEarley(vocab, state, scratch);
}

}  // namespace deepinfer::grammar
