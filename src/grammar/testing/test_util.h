// Helpers shared by the grammar tests: small vocabularies, full-string
// checks, and the brute-force mask oracle.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/compiled_grammar.h"
#include "grammar/matcher.h"
#include "grammar/position_mask.h"
#include "grammar/vocabulary.h"

namespace deepinfer::grammar::testing {

// The token ids a position mask accepts, whichever form it holds them in.
inline std::set<int32_t> AcceptedIds(const PositionMask& m) {
  std::set<int32_t> out(m.accepted_ids.begin(), m.accepted_ids.end());
  m.accepted_bits.ForEachSet([&](int32_t id) { out.insert(id); });
  return out;
}

// Every dense state of `compiled` has the mask a plain byte walk gives (a
// CompiledGrammar of the same automaton without profiles or class tries).
inline void ExpectMasksEqualPlainWalk(const CompiledGrammar& compiled,
                                      const std::shared_ptr<const Vocabulary>& vocab,
                                      const std::string& label) {
  const GrammarAutomaton& a = compiled.automaton();
  CompiledGrammar plain(a, vocab);
  for (uint32_t s = 0; s < a.num_states(); ++s) {
    if (a.byte_edge_begin[s] == a.byte_edge_begin[s + 1]) continue;
    const PositionMask& got = compiled.MaskAt(s);
    const PositionMask& want = plain.MaskAt(s);
    EXPECT_EQ(AcceptedIds(got), AcceptedIds(want)) << label << " state " << s;
    EXPECT_EQ(got.uncertain, want.uncertain) << label << " state " << s;
  }
}

// Every string over `alphabet` of length 1..max_len, then one EOS token.
inline std::shared_ptr<const Vocabulary> AllStringsVocab(const std::string& alphabet, int max_len) {
  std::vector<std::string> tokens;
  std::vector<std::string> frontier = {""};
  for (int len = 1; len <= max_len; ++len) {
    std::vector<std::string> next;
    for (const std::string& p : frontier) {
      for (char c : alphabet) next.push_back(p + c);
    }
    tokens.insert(tokens.end(), next.begin(), next.end());
    frontier = std::move(next);
  }
  tokens.push_back("<eos>");
  int32_t eos = static_cast<int32_t>(tokens.size() - 1);
  return std::make_shared<Vocabulary>(std::move(tokens), std::vector<int32_t>{eos});
}

inline std::shared_ptr<const CompiledGrammar> CompileOrDie(const Grammar& g,
                                                           std::shared_ptr<const Vocabulary> v) {
  Deadline deadline(5.0);
  StatusOr<GrammarAutomaton> a = BuildAutomaton(g, BuildLimits{}, deadline);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  if (!a.ok()) return nullptr;
  return std::make_shared<CompiledGrammar>(std::move(*a), std::move(v));
}

// Byte-level full match (no vocabulary needed beyond a dummy).
inline bool Matches(const std::shared_ptr<const CompiledGrammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.AcceptBytes(s) && m.IsAccepting();
}

// Oracle: token t is allowed iff the byte parser accepts its bytes (the
// grammar is trimmed, so a live parse can always be completed); EOS iff
// the matcher is accepting.
inline ::testing::AssertionResult MaskMatchesProbe(GrammarMatcher& m) {
  const Vocabulary& v = m.grammar().vocab();
  TokenBitmask mask;
  m.FillNextTokenBitmask(&mask);
  for (size_t id = 0; id < v.size(); ++id) {
    bool in_mask = mask.Test(static_cast<int32_t>(id));
    bool expect;
    if (v.is_eos(static_cast<int32_t>(id))) {
      expect = m.IsAccepting();
    } else {
      expect = m.AcceptToken(static_cast<int32_t>(id));
      if (expect) m.Rollback(1);
    }
    if (in_mask != expect) {
      return ::testing::AssertionFailure()
             << "token " << id << " '" << v.token(static_cast<int32_t>(id)) << "': mask says " << in_mask
             << ", probe says " << expect << " after " << m.num_tokens() << " tokens";
    }
  }
  return ::testing::AssertionSuccess();
}

// Random walk under the mask; checks the mask against the oracle at every
// step and that rollback restores earlier masks. Returns the text produced.
inline std::string RandomWalkChecked(const std::shared_ptr<const CompiledGrammar>& g, uint32_t seed,
                                     int max_steps) {
  std::mt19937 rng(seed);
  GrammarMatcher m(g);
  const Vocabulary& v = g->vocab();
  std::vector<TokenBitmask> masks;
  std::string text;
  for (int step = 0; step < max_steps && !m.IsTerminated(); ++step) {
    EXPECT_TRUE(MaskMatchesProbe(m)) << "seed " << seed << " text '" << text << "'";
    TokenBitmask mask;
    m.FillNextTokenBitmask(&mask);
    masks.push_back(mask);
    std::vector<int32_t> allowed;
    mask.ForEachSet([&](int32_t id) { allowed.push_back(id); });
    if (allowed.empty()) {
      ADD_FAILURE() << "dead end (no token allowed) after '" << text << "'";
      break;
    }
    int32_t pick = allowed[rng() % allowed.size()];
    EXPECT_TRUE(m.AcceptToken(pick));
    if (!v.is_eos(pick)) text += v.token(pick);
  }
  // Rollback to a random earlier step must reproduce its mask.
  if (!masks.empty()) {
    size_t back = rng() % masks.size();
    size_t target = masks.size() - 1 - back;  // step index to return to
    m.Rollback(static_cast<int>(m.num_tokens() - target));
    TokenBitmask mask;
    m.FillNextTokenBitmask(&mask);
    EXPECT_EQ(mask, masks[target]) << "rollback to step " << target;
  }
  return text;
}

}  // namespace deepinfer::grammar::testing
