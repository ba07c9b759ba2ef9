// libFuzzer target for the grammar engine: random regexes, JSON schemas, GBNF
// and Lark grammars go through the front ends and the automaton builder; when
// they compile, a matcher walks a few steps over a small fixed vocabulary
// (mask, accept, rollback) and consumes the input bytes themselves.
//
// Two compiled forms walk in lockstep: one with the string profiles
// (bounded strings and keys derived from the reference string automaton,
// string_profile.h) and one with plain vocabulary walks only; their masks
// must be equal. The finish-soon completion must end the parse.
//
// Input: first byte selects the front end, the rest is the source text.
// Limits are lowered so one input stays well under a second.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/compiled_grammar.h"
#include "grammar/compiler.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/lark.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"
#include "grammar/string_profile.h"

using namespace deepinfer;
using namespace deepinfer::grammar;

namespace {

std::shared_ptr<const Vocabulary> FuzzVocab() {
  static const std::shared_ptr<const Vocabulary> vocab = [] {
    std::vector<std::string> t = {"{",
                                  "}",
                                  "[",
                                  "]",
                                  "\"",
                                  ":",
                                  ",",
                                  " ",
                                  "\n",
                                  "a",
                                  "b",
                                  "z",
                                  "0",
                                  "1",
                                  "9",
                                  "-",
                                  ".",
                                  "e",
                                  "true",
                                  "false",
                                  "null",
                                  "\\",
                                  "\\u00",
                                  "\"a\"",
                                  "{\"",
                                  "\":",
                                  "\",\"",
                                  "ab",
                                  "abc",
                                  "12",
                                  "é",
                                  "\xE4\xB8\xAD",
                                  "\xF0\x9F\x98\x80",
                                  "\xFF",
                                  "(",
                                  ")",
                                  "x",
                                  "+",
                                  "*",
                                  "<eos>"};
    int32_t eos = static_cast<int32_t>(t.size() - 1);
    return std::make_shared<Vocabulary>(std::move(t), std::vector<int32_t>{eos});
  }();
  return vocab;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  StatusOr<Grammar> g = Status(InvalidArgument("unset"));
  switch (data[0] % 6) {
    case 0:
      g = RegexToGrammar(text);
      break;
    case 1:
      g = JsonSchemaToGrammar(text);
      break;
    case 2: {
      JsonSchemaOptions o;
      o.any_whitespace = true;
      o.strict = false;
      g = JsonSchemaToGrammar(text, o);
      break;
    }
    case 3:
      g = GbnfToGrammar(text);
      break;
    case 4:
      g = LarkToGrammar(text);
      break;
    default: {
      // choice: the text split at NUL bytes.
      std::vector<std::string> choices(1);
      for (char c : text) {
        if (c == '\0') {
          choices.emplace_back();
        } else {
          choices.back() += c;
        }
      }
      g = ChoiceToGrammar(choices);
      break;
    }
  }
  if (!g.ok()) return 0;
  BuildLimits limits;
  limits.max_nfa_states = 200'000;
  limits.max_dfa_states_per_rule = 2'000;
  limits.time_limit_s = 1.0;
  Deadline deadline(limits.time_limit_s);
  StatusOr<GrammarAutomaton> a = BuildAutomaton(*g, limits, deadline);
  if (!a.ok()) return 0;
  static const auto profiles = std::make_shared<const StringProfiles>(FuzzVocab());
  auto plain = std::make_shared<const CompiledGrammar>(*a, FuzzVocab());
  auto cg = std::make_shared<const CompiledGrammar>(std::move(*a), FuzzVocab(), nullptr, profiles);
  GrammarMatcher m(cg), reference(plain);
  const Vocabulary& v = cg->vocab();
  TokenBitmask mask(v.size()), reference_mask(v.size());
  size_t pick = size;
  for (int step = 0; step < 12; ++step) {
    m.FillNextTokenBitmask(&mask);
    reference.FillNextTokenBitmask(&reference_mask);
    if (mask != reference_mask) __builtin_trap();  // derived masks must equal walked ones
    std::string finish = m.ShortestCompletion(64);
    if (!finish.empty()) {
      if (!m.AcceptBytes(finish)) __builtin_trap();
      if (finish.size() < 64 && !m.IsAccepting()) __builtin_trap();
      m.Rollback(1);
    }
    std::vector<int32_t> allowed;
    mask.ForEachSet([&](int32_t id) { allowed.push_back(id); });
    if (allowed.empty()) break;
    // Jump-forward bytes must be accepted and leave the state as it was.
    std::string forced = m.ForcedBytes(64);
    if (!forced.empty()) {
      if (!m.AcceptBytes(forced)) __builtin_trap();
      m.Rollback(1);
    }
    int32_t id = allowed[pick++ % allowed.size()];
    if (!m.AcceptToken(id)) __builtin_trap();  // the mask promised this token
    if (!reference.AcceptToken(id)) __builtin_trap();
    if (step == 5) {
      m.Rollback(2);
      reference.Rollback(2);
    }
  }
  m.Reset();
  m.AcceptBytes(text);
  m.IsAccepting();
  return 0;
}
