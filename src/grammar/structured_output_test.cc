// StructuredOutput / GrammarConstraint: the TokenConstraint contract the
// engine and server rely on (mask layout incl. a model vocabulary larger than
// the tokenizer's, EOS only when complete, jump-forward tokens, rollback,
// error codes, concurrent use).
#include "grammar/structured_output.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "grammar/grammar_constraint.h"
#include "grammar/vocabulary.h"

namespace deepinfer {
namespace {

// Single printable bytes plus a few multi-byte tokens, then EOS and a control
// token (no bytes).
std::vector<std::string> SmallVocab() {
  std::vector<std::string> v;
  for (int c = 32; c < 127; ++c) v.push_back(std::string(1, static_cast<char>(c)));
  for (const char* t : {"{\"", "\":", "name", "\":\"", "age", "true", "false", "ab", "abc"}) v.push_back(t);
  v.push_back("");  // EOS
  v.push_back("");  // control token
  return v;
}

int32_t IdOf(const std::vector<std::string>& v, const std::string& s) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == s) return static_cast<int32_t>(i);
  }
  return -1;
}

bool Bit(const TokenBitmask& m, int64_t id) { return m.Test(static_cast<int32_t>(id)); }

struct Fixture {
  std::vector<std::string> vocab = SmallVocab();
  int32_t eos = static_cast<int32_t>(vocab.size() - 2);
  std::unique_ptr<StructuredOutput> so;
  Fixture() {
    auto r = StructuredOutput::Create(vocab, {eos});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    so = std::move(*r);
  }
  std::unique_ptr<TokenConstraint> Make(StructuredOutputSpec spec) {
    auto c = so->MakeConstraint(spec);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  // Feeds `text` one byte-token at a time.
  bool Feed(TokenConstraint& c, const std::string& text) {
    for (char ch : text) {
      if (!c.Accept(IdOf(vocab, std::string(1, ch)))) return false;
    }
    return true;
  }
};

TEST(StructuredOutputTest, CreateValidatesInput) {
  EXPECT_EQ(StructuredOutput::Create({}, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StructuredOutput::Create({"a"}, {5}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StructuredOutput::Create({"a"}, {-1}).status().code(), StatusCode::kInvalidArgument);
  auto ok = StructuredOutput::Create({"a", ""}, {1});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->vocab_size(), 2);
}

TEST(StructuredOutputTest, ErrorsNameTheProblem) {
  Fixture f;
  StructuredOutputSpec bad_json{StructuredOutputSpec::Kind::kJsonSchema, "{not json"};
  EXPECT_EQ(f.so->MakeConstraint(bad_json).status().code(), StatusCode::kInvalidArgument);
  StructuredOutputSpec unsupported{StructuredOutputSpec::Kind::kJsonSchema,
                                   R"({"not":{"items":{"type":"string"}}})"};
  unsupported.strict = true;
  auto u = f.so->MakeConstraint(unsupported);
  EXPECT_EQ(u.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(u.status().message().find("not (of 'items')"), std::string::npos) << u.status().message();
  StructuredOutputSpec bad_regex{StructuredOutputSpec::Kind::kRegex, "(a"};
  EXPECT_EQ(f.so->MakeConstraint(bad_regex).status().code(), StatusCode::kInvalidArgument);
  StructuredOutputSpec no_choices{StructuredOutputSpec::Kind::kChoice, ""};
  EXPECT_EQ(f.so->MakeConstraint(no_choices).status().code(), StatusCode::kInvalidArgument);
  StructuredOutputSpec bad_gbnf{StructuredOutputSpec::Kind::kGbnf, "root ::= undefined_rule"};
  EXPECT_FALSE(f.so->MakeConstraint(bad_gbnf).ok());
}

TEST(StructuredOutputTest, StrictRefusesBestEffortRelaxesAndReports) {
  Fixture f;
  // uniqueItems over objects is not a finite item set: not enforceable.
  StructuredOutputSpec spec{
      StructuredOutputSpec::Kind::kJsonSchema,
      R"({"type":"object","properties":{"ids":{"type":"array","items":{"type":"object"},)"
      R"("uniqueItems":true}},"required":["ids"]})"};
  spec.strict = true;
  auto refused = f.so->Make(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnimplemented);  // HTTP 400 in the server
  EXPECT_NE(refused.status().message().find("uniqueItems"), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("#/properties/ids"), std::string::npos);
  spec.strict = false;
  for (int round = 0; round < 2; ++round) {  // the second is a cache hit: same report
    auto made = f.so->Make(spec);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    ASSERT_EQ(made->relaxed.size(), 1u);
    EXPECT_NE(made->relaxed[0].keyword.find("uniqueItems"), std::string::npos);
    EXPECT_EQ(made->relaxed[0].pointer, "#/properties/ids");
    EXPECT_NE(made->Warning().find("uniqueItems"), std::string::npos);
    // Relaxed means left out: duplicates are accepted.
    EXPECT_TRUE(f.Feed(*made->constraint, R"({"ids":[{},{}]})"));
    EXPECT_TRUE(made->constraint->IsComplete());
  }
  // Everything enforced: nothing to report, strict or not.
  StructuredOutputSpec exact{StructuredOutputSpec::Kind::kJsonSchema, R"({"type":"array","uniqueItems":true,)"
                                                                      R"("items":{"enum":[1,2]}})"};
  auto made = f.so->Make(exact);
  ASSERT_TRUE(made.ok());
  EXPECT_TRUE(made->relaxed.empty());
  EXPECT_EQ(made->Warning(), "");
  exact.strict = true;
  EXPECT_TRUE(f.so->Make(exact).ok());
}

TEST(StructuredOutputTest, EosOnlyWhenCompleteAndPaddedVocab) {
  Fixture f;
  auto c = f.Make({StructuredOutputSpec::Kind::kRegex, "ab|abc"});
  ASSERT_TRUE(c);
  // The model has 40 more logits than the tokenizer has tokens.
  const int64_t model_vocab = static_cast<int64_t>(f.vocab.size()) + 40;
  TokenBitmask mask(static_cast<size_t>(model_vocab));
  mask.SetAll();  // FillAllowedMask overwrites every bit
  c->FillAllowedMask(&mask);
  for (int64_t id = static_cast<int64_t>(f.vocab.size()); id < model_vocab; ++id) EXPECT_FALSE(Bit(mask, id));
  EXPECT_TRUE(Bit(mask, IdOf(f.vocab, "a")));
  EXPECT_TRUE(Bit(mask, IdOf(f.vocab, "ab")));
  EXPECT_TRUE(Bit(mask, IdOf(f.vocab, "abc")));
  EXPECT_FALSE(Bit(mask, IdOf(f.vocab, "b")));
  EXPECT_FALSE(Bit(mask, f.eos));
  EXPECT_FALSE(Bit(mask, f.eos + 1));  // control token: never
  EXPECT_FALSE(c->Accept(f.eos));
  EXPECT_FALSE(c->Accept(static_cast<int32_t>(model_vocab - 1)));  // padded id
  ASSERT_TRUE(c->Accept(IdOf(f.vocab, "ab")));
  EXPECT_FALSE(c->IsComplete());  // "c" may still follow
  c->FillAllowedMask(&mask);
  EXPECT_TRUE(Bit(mask, f.eos));
  EXPECT_TRUE(Bit(mask, IdOf(f.vocab, "c")));
  ASSERT_TRUE(c->Accept(IdOf(f.vocab, "c")));
  EXPECT_TRUE(c->IsComplete());
  c->FillAllowedMask(&mask);
  for (int64_t id = 0; id < model_vocab; ++id) EXPECT_EQ(Bit(mask, id), id == f.eos) << id;
  c->Rollback(1);
  EXPECT_FALSE(c->IsComplete());
  // A smaller model vocabulary than the tokenizer's: only the common ids.
  TokenBitmask small(40);
  small.SetAll();
  c->FillAllowedMask(&small);
  for (int64_t id = 0; id < 40; ++id) EXPECT_EQ(Bit(small, id), f.vocab[id] == "c") << id;
  EXPECT_EQ(small.words()[1] >> 8, 0u);  // bits past 40 stay clear
}

TEST(StructuredOutputTest, ForcedTokensJumpForward) {
  Fixture f;
  auto c = f.Make({StructuredOutputSpec::Kind::kJsonSchema,
                   R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},
                       "required":["name","age"],"additionalProperties":false})"});
  ASSERT_TRUE(c);
  TokenBitmask before(f.vocab.size()), after(f.vocab.size());
  c->FillAllowedMask(&before);
  std::vector<int32_t> forced = c->ForcedTokens();
  std::string text;
  for (int32_t id : forced) text += f.vocab[id];
  EXPECT_EQ(text, "{\"name\":\"");
  // Greedy longest match: "{\"" + "name" + "\":\"".
  EXPECT_EQ(forced,
            (std::vector<int32_t>{IdOf(f.vocab, "{\""), IdOf(f.vocab, "name"), IdOf(f.vocab, "\":\"")}));
  c->FillAllowedMask(&after);
  EXPECT_EQ(before, after);  // ForcedTokens did not move the state
  for (int32_t id : forced) ASSERT_TRUE(c->Accept(id));
  EXPECT_TRUE(c->ForcedTokens().empty());  // inside the string: a choice
  ASSERT_TRUE(f.Feed(*c, "Bo\""));
  forced = c->ForcedTokens();
  text.clear();
  for (int32_t id : forced) text += f.vocab[id];
  EXPECT_EQ(text, ",\"age\":");
  for (int32_t id : forced) ASSERT_TRUE(c->Accept(id));
  ASSERT_TRUE(f.Feed(*c, "42"));
  EXPECT_TRUE(c->ForcedTokens().empty());  // more digits or "}"
  ASSERT_TRUE(f.Feed(*c, "}"));
  EXPECT_TRUE(c->IsComplete());
  EXPECT_TRUE(c->ForcedTokens().empty());  // only EOS is left
  ASSERT_TRUE(c->Accept(f.eos));
  EXPECT_TRUE(c->IsComplete());
}

// Finish-soon: the tokens end the output, each allowed in turn, and the
// state is unchanged by asking.
TEST(StructuredOutputTest, FinishTokensCompleteTheOutput) {
  Fixture f;
  auto c = f.Make({StructuredOutputSpec::Kind::kJsonSchema,
                   R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},
                       "required":["name","age"],"additionalProperties":false})"});
  ASSERT_TRUE(c);
  ASSERT_TRUE(f.Feed(*c, "{\"name\":\"Bo"));
  TokenBitmask before(f.vocab.size()), mask(f.vocab.size());
  c->FillAllowedMask(&before);
  std::vector<int32_t> finish = c->FinishTokens();
  c->FillAllowedMask(&mask);
  EXPECT_EQ(before, mask);
  std::string text;
  for (int32_t id : finish) {
    c->FillAllowedMask(&mask);
    ASSERT_TRUE(Bit(mask, id)) << "token '" << f.vocab[id] << "' not allowed after '" << text << "'";
    ASSERT_TRUE(c->Accept(id));
    text += f.vocab[id];
  }
  EXPECT_EQ(text, "\",\"age\":0}");
  EXPECT_TRUE(c->IsComplete());
  EXPECT_TRUE(c->FinishTokens().empty());
  c->FillAllowedMask(&mask);
  EXPECT_TRUE(Bit(mask, f.eos));
}

TEST(StructuredOutputTest, EveryKind) {
  Fixture f;
  struct Case {
    StructuredOutputSpec spec;
    std::string good, bad;
  };
  StructuredOutputSpec choice{StructuredOutputSpec::Kind::kChoice, ""};
  choice.choices = {"yes", "no"};
  StructuredOutputSpec ws{StructuredOutputSpec::Kind::kJsonObject, ""};
  ws.any_whitespace = true;
  std::vector<Case> cases = {
      {{StructuredOutputSpec::Kind::kJsonSchema, R"({"type":"array","items":{"type":"boolean"}})"},
       "[true,false]",
       "[1]"},
      {{StructuredOutputSpec::Kind::kJsonObject, ""}, R"({"a":[1,{"b":null}]})", "[]"},
      {ws, "{ \"a\" : 1 }", "{ \"a\" 1 }"},
      {{StructuredOutputSpec::Kind::kRegex, "[0-9]{3}-x"}, "123-x", "12-x"},
      {{StructuredOutputSpec::Kind::kGbnf, "root ::= \"(\" root \")\" | \"\""}, "((()))", "(()"},
      {{StructuredOutputSpec::Kind::kLark, "start: \"a\"+ \"b\""}, "aab", "b"},
      {choice, "no", "ye"},
  };
  for (const Case& k : cases) {
    auto good = f.Make(k.spec);
    ASSERT_TRUE(good);
    EXPECT_TRUE(f.Feed(*good, k.good)) << k.spec.text << " / " << k.good;
    TokenBitmask mask(f.vocab.size());
    good->FillAllowedMask(&mask);
    EXPECT_TRUE(Bit(mask, f.eos)) << k.spec.text << " / " << k.good;
    auto bad = f.Make(k.spec);
    bool all = f.Feed(*bad, k.bad);
    bad->FillAllowedMask(&mask);
    EXPECT_FALSE(all && Bit(mask, f.eos)) << k.spec.text << " / " << k.bad;
  }
}

TEST(StructuredOutputTest, ConcurrentRequests) {
  Fixture f;
  const std::string schema = R"({"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]})";
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto c = f.so->MakeConstraint({StructuredOutputSpec::Kind::kJsonSchema, schema});
      if (!c.ok()) return;
      TokenBitmask mask(f.vocab.size());
      (*c)->FillAllowedMask(&mask);
      ok[t] = f.Feed(**c, "{\"x\":" + std::to_string(t) + "}") && (*c)->IsComplete() ? 1 : 0;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(ok[t], 1) << t;
}

// Spellings that JSON Schema allows but double-based validators (Python's
// jsonschema, used by the generate test) reject are never generated.
TEST(StructuredOutputTest, ValidatorSafeSpellings) {
  Fixture f;
  struct Case {
    const char* schema;
    const char* text;
    bool ok;
  };
  for (const Case& k : std::vector<Case>{
           {R"({"type":"string","format":"date"})", "\"0001-01-01\"", true},
           {R"({"type":"string","format":"date"})", "\"0000-01-01\"", false},
           {R"({"type":"string","format":"date"})", "\"2000-02-29\"", true},
           {R"({"type":"string","format":"date"})", "\"0400-02-29\"", true},
           {R"({"type":"string","format":"date"})", "\"1900-02-29\"", false},
           {R"({"type":"number","exclusiveMinimum":0})", "5e9", true},
           {R"({"type":"number","exclusiveMinimum":0})", "5e+9", true},
           {R"({"type":"number","exclusiveMinimum":0})", "0.001", true},
           {R"({"type":"number","exclusiveMinimum":0})", "5e-999", false},
           {R"({"type":"number","exclusiveMinimum":0})", "0", false},
       }) {
    auto c = f.Make({StructuredOutputSpec::Kind::kJsonSchema, k.schema});
    ASSERT_TRUE(c);
    bool fed = f.Feed(*c, k.text);
    TokenBitmask mask(f.vocab.size());
    c->FillAllowedMask(&mask);
    EXPECT_EQ(fed && Bit(mask, f.eos), k.ok) << k.schema << " " << k.text;
  }
}

// Trie nodes against brute force: node_end is the end of the run of sorted
// tokens sharing the prefix; node_bytes_below the bytes after it.
TEST(StructuredOutputTest, VocabularyTrieNodes) {
  grammar::Vocabulary v({"ab", "a", "abc", "b", "abd", "ba", "ab", "c", "bab"}, {});
  const auto& ids = v.sorted_ids();
  for (uint32_t i = 0; i < ids.size(); ++i) {
    std::string_view tok = v.sorted_token(i);
    for (size_t len = v.sorted_lcp()[i] + 1; len <= tok.size(); ++len) {
      std::string_view prefix = tok.substr(0, len);
      uint32_t end = i;
      uint64_t below[4] = {0, 0, 0, 0};
      while (end < ids.size() && v.sorted_token(end).substr(0, len) == prefix) {
        for (char ch : v.sorted_token(end).substr(len)) {
          uint8_t b = static_cast<uint8_t>(ch);
          below[b >> 6] |= uint64_t{1} << (b & 63);
        }
        ++end;
      }
      uint32_t node = v.node(i, len);
      EXPECT_EQ(v.node_end(node), end) << tok << " " << len;
      for (int w = 0; w < 4; ++w) EXPECT_EQ(v.node_bytes_below(node)[w], below[w]) << tok << " " << len;
    }
  }
}

TEST(StructuredOutputTest, GreedyTokenizeLongestMatch) {
  grammar::Vocabulary v({"a", "ab", "abc", "b", "c", "x"}, {});
  EXPECT_EQ(grammar::GreedyTokenize(v, "abcab"), (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(grammar::GreedyTokenize(v, "bca"), (std::vector<int32_t>{3, 4, 0}));
  EXPECT_EQ(grammar::GreedyTokenize(v, "ab?c"), (std::vector<int32_t>{1}));  // stops at an untokenizable byte
}

}  // namespace
}  // namespace deepinfer
