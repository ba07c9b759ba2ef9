// GrammarCompiler cache; masks on the real llama3 vocabulary checked by
// brute force; the property test (random sampling under the mask produces
// JSON that an independent validator, python3-jsonschema, accepts).
#include "grammar/compiler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <unordered_map>

#include "grammar/testing/test_util.h"
#include "grammar/testing/vocab_loader.h"

namespace deepinfer::grammar {
namespace {

using Json = nlohmann::ordered_json;
using testing::AllStringsVocab;
using testing::MaskMatchesProbe;

TEST(CompilerTest, CacheReturnsSharedGrammar) {
  GrammarCompiler compiler(AllStringsVocab("ab", 1));
  auto a = compiler.CompileJsonSchema(R"({"type":"string"})");
  auto b = compiler.CompileJsonSchema(R"({"type":"string"})");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  JsonSchemaOptions ws;
  ws.any_whitespace = true;
  auto c = compiler.CompileJsonSchema(R"({"type":"string"})", ws);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->get(), c->get());
  EXPECT_FALSE(compiler.CompileJsonSchema("{bad").ok());
  EXPECT_FALSE(compiler.CompileRegex("(").ok());
  EXPECT_EQ(compiler.cache_size(), 2u);
  auto r1 = compiler.CompileRegex("a+");
  auto r2 = compiler.CompileChoice({"a", "b"});
  auto r3 = compiler.CompileGbnf("root ::= \"a\"");
  auto r4 = compiler.CompileJsonObject();
  auto r5 = compiler.CompileLark("start: \"a\"+");
  EXPECT_TRUE(r1.ok() && r2.ok() && r3.ok() && r4.ok() && r5.ok());
  EXPECT_EQ(compiler.cache_size(), 7u);
  EXPECT_FALSE(compiler.CompileChoice({}).ok());
}

TEST(CompilerTest, TimeLimitIsAnError) {
  CompilerOptions opts;
  opts.limits.time_limit_s = 0.0;
  GrammarCompiler compiler(AllStringsVocab("a", 1), opts);
  auto r = compiler.CompileRegex("(a|b|c|d)*e{1,400}(f|g)*");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("time limit"), std::string::npos) << r.status().message();
}

// Issue 19 (3): a failed compile is remembered, so resending a grammar that
// ran out of its time budget does not cost the budget again.
TEST(CompilerTest, FailedCompilesAreCached) {
  CompilerOptions opts;
  opts.limits.time_limit_s = 0.3;
  GrammarCompiler compiler(AllStringsVocab("ab", 2), opts);
  const std::string slow = "(a|aa|aaa){0,3000}b";
  auto t0 = std::chrono::steady_clock::now();
  auto first = compiler.CompileRegex(slow);
  const double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kResourceExhausted) << first.status().ToString();
  EXPECT_GE(first_s, 0.25);
  t0 = std::chrono::steady_clock::now();
  auto again = compiler.CompileRegex(slow);
  const double again_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().ToString(), first.status().ToString());
  EXPECT_LT(again_s, 0.02);
  EXPECT_EQ(compiler.failed_cache_size(), 1u);
  EXPECT_EQ(compiler.cache_size(), 0u);
  // Malformed sources are remembered as well; ClearCache forgets both kinds.
  EXPECT_FALSE(compiler.CompileRegex("(").ok());
  EXPECT_EQ(compiler.failed_cache_size(), 2u);
  compiler.ClearCache();
  EXPECT_EQ(compiler.failed_cache_size(), 0u);
}

// After failed_ttl a failure is tried again (a time limit may have been the
// machine's load).
TEST(CompilerTest, FailedCompilesExpire) {
  CompilerOptions opts;
  opts.limits.time_limit_s = 0.2;
  opts.failed_ttl = std::chrono::seconds(0);
  GrammarCompiler compiler(AllStringsVocab("ab", 2), opts);
  const std::string slow = "(a|aa|aaa){0,3000}b";
  ASSERT_FALSE(compiler.CompileRegex(slow).ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_FALSE(compiler.CompileRegex(slow).ok());
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.15);
  EXPECT_EQ(compiler.failed_cache_size(), 1u);
}

TEST(CompilerTest, FailedCacheIsBounded) {
  CompilerOptions opts;
  opts.max_failed_entries = 3;
  GrammarCompiler compiler(AllStringsVocab("ab", 1), opts);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(compiler.CompileRegex("(" + std::string(i, 'a')).ok());
  EXPECT_EQ(compiler.failed_cache_size(), 3u);
}

// Issue 19 (7): the cache is bounded by the bytes its grammars retain, not
// only by entries: big grammars evict the least recently used ones.
TEST(CompilerTest, CacheIsBoundedByBytes) {
  GrammarCompiler probe(AllStringsVocab("ab", 2));
  auto one = probe.CompileRegex("[ab]{0,400}");
  ASSERT_TRUE(one.ok());
  const size_t one_bytes = EstimatedBytes(**one);
  ASSERT_GT(one_bytes, 4096u);

  CompilerOptions opts;
  opts.max_cache_bytes = 3 * one_bytes + one_bytes / 2;  // three of them, not four
  GrammarCompiler compiler(AllStringsVocab("ab", 2), opts);
  std::vector<std::shared_ptr<const CompiledGrammar>> kept;
  for (int k = 0; k < 8; ++k) {
    auto g = compiler.CompileRegex("[ab]{0," + std::to_string(400 + k) + "}");
    ASSERT_TRUE(g.ok());
    kept.push_back(*g);
    EXPECT_LE(compiler.cache_bytes(), opts.max_cache_bytes) << k;
    // Touch the first one each time: least recently used is someone else.
    auto first = compiler.CompileRegex("[ab]{0,400}");
    ASSERT_TRUE(first.ok());
    if (k < 3) EXPECT_EQ(first->get(), kept[0].get()) << k;
  }
  EXPECT_LE(compiler.cache_size(), 3u);
  EXPECT_GE(compiler.cache_size(), 2u);
  // The most recent and the re-touched first survive; an old one is rebuilt.
  EXPECT_EQ(compiler.CompileRegex("[ab]{0,407}")->get(), kept[7].get());
  EXPECT_EQ(compiler.CompileRegex("[ab]{0,400}")->get(), kept[0].get());
  EXPECT_NE(compiler.CompileRegex("[ab]{0,401}")->get(), kept[1].get());

  // A grammar larger than the whole budget is served and not kept.
  CompilerOptions tiny;
  tiny.max_cache_bytes = 1024;
  GrammarCompiler small(AllStringsVocab("ab", 2), tiny);
  auto big = small.CompileRegex("[ab]{0,400}");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(small.cache_size(), 0u);
}

std::shared_ptr<const Vocabulary> Llama3() {
  static auto vocab =
      testing::LoadTokenizerJson(std::string(DI_SHARED_DIR) + "/models/tokenizers/llama3/tokenizer.json.gz",
                                 {"<|eot_id|>", "<|end_of_text|>"});
  return vocab.ok() ? *vocab : nullptr;
}

std::vector<int32_t> GreedyTokenize(const Vocabulary& v, const std::string& text) {
  std::unordered_map<std::string, int32_t> by_bytes;
  for (int32_t id : v.sorted_ids()) by_bytes.emplace(v.token(id), id);
  std::vector<int32_t> out;
  for (size_t i = 0; i < text.size();) {
    size_t len = std::min(v.max_token_length(), text.size() - i);
    while (len > 0 && !by_bytes.count(text.substr(i, len))) --len;
    if (len == 0) return {};
    out.push_back(by_bytes[text.substr(i, len)]);
    i += len;
  }
  return out;
}

TEST(CompilerTest, Llama3MasksMatchBruteForce) {
  auto vocab = Llama3();
  if (!vocab) GTEST_SKIP() << "llama3 tokenizer not found under " << DI_SHARED_DIR;
  ASSERT_EQ(vocab->size(), 128256u);
  GrammarCompiler compiler(vocab);
  struct Walk {
    GrammarCompiler::Result grammar;
    std::string text;
  };
  std::vector<Walk> walks;
  walks.push_back(
      {compiler.CompileJsonSchema(
           R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},"n":{"type":"integer","minimum":-5,"maximum":300},"tags":{"type":"array","items":{"enum":["x","y z"]}}},"required":["name"]})"),
       R"({"name":"Zoë \"Z\"","n":-5,"tags":["y z","x"],"extra":[1,{"a":null}]})"});
  walks.push_back({compiler.CompileRegex(R"(\(\d{3}\) [a-z]+\.com)"), "(555) example.com"});
  // Positions read from string profiles (patternProperties key regions, an
  // end-anchored pattern) and from a byte-class trie (a letters pattern).
  walks.push_back(
      {compiler.CompileJsonSchema(
           R"({"type":"object","properties":{"who":{"type":"string","pattern":"^[A-Za-z ]{2,20}$"},"f":{"type":"string","pattern":"\\.md$"}},"patternProperties":{"^x-":{"type":"integer"},"_n$":{"type":"string"}},"additionalProperties":false})"),
       R"({"who":"Ada Lovelace","f":"notes.md","x-id":7,"item_n":"a\"b"})"});
  walks.push_back({compiler.CompileGbnf("root ::= (\"ab\" | \"a\" [0-9]+ \" \")+ \"!\""), "aba12 a3 ab!"});
  // Format / prefix pattern ∩ length products whose states walk or refuse
  // most first bytes (ComputeInsideMask copies only the profile-read ranges
  // then; after `^re` the rest is read from the profile).
  walks.push_back(
      {compiler.CompileJsonSchema(
           R"({"type":"object","properties":{"u":{"type":"string","format":"uri-reference","maxLength":64},"e":{"type":"string","format":"email","maxLength":64},"p":{"type":"string","pattern":"^re","maxLength":40}}})"),
       R"({"u":"../docs/index.html#top","e":"ops@example.test","p":"release notes for the week"})"});
  for (Walk& w : walks) {
    ASSERT_TRUE(w.grammar.ok()) << w.grammar.status().ToString();
    std::vector<int32_t> tokens = GreedyTokenize(*vocab, w.text);
    ASSERT_FALSE(tokens.empty());
    GrammarMatcher m(*w.grammar);
    for (size_t i = 0; i < tokens.size(); ++i) {
      // Every other step, to keep the test fast; the last step always.
      if (i % 2 == 0 || i + 1 == tokens.size()) {
        ASSERT_TRUE(MaskMatchesProbe(m)) << w.text << " step " << i;
      }
      ASSERT_TRUE(m.AcceptToken(tokens[i])) << w.text << " token " << i;
    }
    EXPECT_TRUE(m.IsAccepting()) << w.text;
    EXPECT_TRUE(MaskMatchesProbe(m));
    EXPECT_TRUE(m.AcceptToken(vocab->eos_ids()[0]));
  }
}

// Every state's mask of products that walk or refuse most first bytes (a
// prefix pattern, a format, each with a length bound) against the plain
// walk on the 128k vocabulary: ComputeInsideMask then copies only the
// profile-read ranges (after `^re` the rest is read from the profile), or,
// when the walk would be broad, the class trie answers. The last two
// patterns exclude characters (`.`: line breaks, `\s`: Unicode spaces), so
// their partitions hold only outside escapes and split UTF-8 continuation
// bytes; the commit pattern's literal prefix makes its whole-rule
// partition too fine, so its tries start from broad states. Both must take
// the trie path (llama3's 395 tokens with a backslash and ~30k with
// multi-byte UTF-8 then go through the byte-by-byte runs under the
// backslash's class and the split continuation classes).
TEST(CompilerTest, Llama3InsideMasksOfNarrowProductsEqualThePlainWalk) {
  auto vocab = Llama3();
  if (!vocab) GTEST_SKIP() << "llama3 tokenizer not found under " << DI_SHARED_DIR;
  GrammarCompiler compiler(vocab);
  compiler.WarmUp();  // the string profiles, as StructuredOutput::Create builds them
  // uri-reference x 64: the profile plan walks most of the vocabulary, so
  // its positions are answered by the class trie (5 byte classes).
  for (const char* schema :
       {R"({"type":"string","pattern":"^re","maxLength":12})",
        R"({"type":"string","format":"email","maxLength":8})",
        R"({"type":"string","format":"uri-reference","maxLength":64})",
        // Slack 10 (the pattern needs 10 characters):
        // tokens within it are run, sharing prefixes.
        R"({"type":"string","minLength":2,"maxLength":30,"pattern":"\\$\\{version\\}"})"}) {
    auto compiled = compiler.CompileJsonSchema(schema);
    ASSERT_TRUE(compiled.ok()) << schema;
    testing::ExpectMasksEqualPlainWalk(**compiled, vocab, schema);
  }
  for (const char* schema : {R"({"type":"string","pattern":"^(feat|fix|docs)(\\([a-z-]+\\))?: .+"})",
                             R"({"type":"string","pattern":"^[^\\s]+$"})"}) {
    auto compiled = compiler.CompileJsonSchema(schema);
    ASSERT_TRUE(compiled.ok()) << schema;
    const GrammarAutomaton& a = (*compiled)->automaton();
    int trie_states = 0;
    for (uint32_t s = 0; s < a.num_states(); ++s) trie_states += (*compiled)->UsesClassTrie(s);
    EXPECT_GE(trie_states, 2) << schema;
    testing::ExpectMasksEqualPlainWalk(**compiled, vocab, schema);
  }
}

// Random sampling under the mask with a JSON-ish vocabulary; steps past a
// budget prefer tokens that close things, so most walks complete.
std::vector<std::string> SampleCompletions(const std::shared_ptr<const CompiledGrammar>& cg, uint32_t seed,
                                           int count) {
  std::mt19937 rng(seed);
  const Vocabulary& v = cg->vocab();
  std::vector<std::string> out;
  TokenBitmask mask;
  for (int n = 0; n < count; ++n) {
    GrammarMatcher m(cg);
    std::string text;
    for (int step = 0; step < 400; ++step) {
      m.FillNextTokenBitmask(&mask);
      std::vector<int32_t> allowed, closing;
      mask.ForEachSet([&](int32_t id) {
        allowed.push_back(id);
        if (v.is_eos(id) || v.token(id).find_first_of("\"]}0") != std::string::npos) closing.push_back(id);
      });
      if (allowed.empty()) {
        ADD_FAILURE() << "dead end after " << text;
        break;
      }
      bool wrap_up = step > 40 && !closing.empty() && rng() % 4 != 0;
      const auto& pool = wrap_up ? closing : allowed;
      int32_t id = pool[rng() % pool.size()];
      EXPECT_TRUE(m.AcceptToken(id));
      if (v.is_eos(id)) {
        out.push_back(text);
        break;
      }
      text += v.token(id);
    }
  }
  return out;
}

TEST(CompilerTest, SampledOutputsValidateWithJsonschema) {
  if (std::system("python3 -c 'import jsonschema' 2>/dev/null") != 0) {
    GTEST_SKIP() << "python3-jsonschema not installed";
  }
  std::ifstream in(std::string(DI_SOURCE_DIR) + "/src/grammar/testdata/json_schema_cases.json");
  std::stringstream ss;
  ss << in.rdbuf();
  Json cases = Json::parse(ss.str());
  // Every printable ASCII char (so any key can be spelled) plus multi-byte
  // tokens that straddle JSON structure.
  std::vector<std::string> tokens = {"true",  "false", "null", "\\n", "\\\"", "é",   "abc", "\":\"",
                                     "\",\"", "{\"",   "\"}",  "12",  "0.",   "\"]", "[\"", "\":"};
  for (char c = 0x20; c < 0x7F; ++c) tokens.push_back(std::string(1, c));
  tokens.push_back("<eos>");
  auto vocab = std::make_shared<Vocabulary>(tokens, std::vector<int32_t>{int32_t(tokens.size() - 1)});
  GrammarCompiler compiler(vocab);
  Json batch = Json::array();
  uint32_t seed = 1;
  size_t completed = 0;
  for (const Json& c : cases) {
    auto cg = compiler.CompileJsonSchema(c["schema"].dump());
    ASSERT_TRUE(cg.ok()) << c["name"];
    for (const std::string& text : SampleCompletions(*cg, seed++, 4)) {
      batch.push_back({{"schema", c["schema"]}, {"draft", c.value("draft", 2020)}, {"text", text}});
      ++completed;
    }
  }
  EXPECT_GT(completed, 150u);
  std::string path = ::testing::TempDir() + "/grammar_sampled.json";
  std::ofstream(path) << batch.dump();
  std::string cmd =
      "python3 -c '\nimport json, sys, jsonschema\nbad = 0\nfor c in json.load(open(sys.argv[1])):\n"
      "  cls = jsonschema.Draft7Validator if c[\"draft\"] == 7 else jsonschema.Draft202012Validator\n"
      "  v = cls(c[\"schema\"], format_checker=cls.FORMAT_CHECKER)\n"
      "  try:\n    inst = json.loads(c[\"text\"])\n  except Exception as e:\n    bad += 1; print(\"not "
      "JSON:\", c[\"text\"]); continue\n"
      "  if not v.is_valid(inst):\n    bad += 1; print(\"invalid:\", json.dumps(c[\"schema\"]), "
      "c[\"text\"])\n"
      "sys.exit(1 if bad else 0)' " +
      path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "see the lines printed above";
}

}  // namespace
}  // namespace deepinfer::grammar
