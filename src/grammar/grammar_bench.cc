// grammar_bench: compile time and per-token mask time on a real vocabulary.
//
//   build/src/grammar/grammar_bench [tokenizer.json(.gz)] [--precompute] [--warmup]
//
// For each (schema, instance) pair: compile (front end + automaton), then
// walk the instance's tokens (greedy longest-match tokenization) computing
// the full-vocabulary mask before every token, twice: "cold" (first request:
// the lazy mask cache fills as it goes) and "warm" (a second request on the
// cached CompiledGrammar, the steady state of a server).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/compiler.h"
#include "grammar/matcher.h"
#include "grammar/testing/bench_util.h"
#include "grammar/testing/vocab_loader.h"

using namespace deepinfer;
using namespace deepinfer::grammar;

namespace {

double WallUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Case {
  const char* name;
  const char* kind;  // json | regex | gbnf
  const char* source;
  const char* instance;
};

const Case kCases[] = {
    {"person", "json",
     R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},"email":{"type":"string","format":"email"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name","age"],"additionalProperties":false})",
     R"({"name":"Alice Johnson","age":34,"email":"alice.johnson@example.com","tags":["engineer","team lead","remote"]})"},
    {"product", "json",
     R"({"type":"object","properties":{"id":{"type":"string","format":"uuid"},"title":{"type":"string","maxLength":80},"price":{"type":"number","minimum":0},"in_stock":{"type":"boolean"},"dimensions":{"type":"object","properties":{"w":{"type":"number"},"h":{"type":"number"}},"required":["w","h"]},"released":{"type":"string","format":"date"}},"required":["id","title","price"]})",
     R"({"id":"123e4567-e89b-12d3-a456-426614174000","title":"Ergonomic wireless keyboard with backlight","price":49.99,"in_stock":true,"dimensions":{"w":44.5,"h":3.2},"released":"2024-03-15"})"},
    {"tree", "json",
     R"({"$defs":{"node":{"type":"object","properties":{"label":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["label"]}},"$ref":"#/$defs/node"})",
     R"({"label":"root","children":[{"label":"left child","children":[{"label":"leaf one"}]},{"label":"right child"}]})"},
    {"enum+anyOf", "json",
     R"({"type":"object","properties":{"status":{"enum":["active","inactive","pending"]},"value":{"anyOf":[{"type":"integer"},{"type":"string"},{"type":"null"}]},"note":{"type":["string","null"]}},"required":["status","value","note"],"additionalProperties":false})",
     R"({"status":"pending","value":"forty two","note":null})"},
    {"any json", "json", R"({"type":"object"})",
     R"({"query":"weather in Paris","results":[{"day":"Monday","high":21.5,"low":12,"conditions":["sunny","light wind"]},{"day":"Tuesday","high":19,"low":11,"conditions":["cloudy"]}],"ok":true,"error":null})"},
    {"long text", "json",
     R"({"type":"object","properties":{"summary":{"type":"string"}},"required":["summary"],"additionalProperties":false})",
     R"({"summary":"The quick brown fox jumps over the lazy dog. Structured generation constrains every token so that the output always parses, and the mask must be computed within the time of one forward pass, which is why the per-position cache matters."})"},
    {"phone regex", "regex", R"(\(\d{3}\) \d{3}-\d{4})", "(555) 123-4567"},
};

}  // namespace

int main(int argc, char** argv) {
  std::string path = std::string(DI_SHARED_DIR) + "/models/tokenizers/llama3/tokenizer.json.gz";
  bool precompute = false, warmup = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--precompute") {
      precompute = true;
    } else if (a == "--warmup") {
      warmup = true;
    } else {
      path = a;
    }
  }
  auto vocab = testing::LoadTokenizerJson(
      path, {"<|eot_id|>", "<|end_of_text|>", "</s>", "<|endoftext|>", "<|im_end|>"});
  if (!vocab.ok()) {
    std::fprintf(stderr, "%s\n", vocab.status().ToString().c_str());
    return 1;
  }
  std::printf("vocabulary: %s (%zu tokens, %zu maskable)%s\n", path.c_str(), (*vocab)->size(),
              (*vocab)->sorted_ids().size(), precompute ? ", precompute on" : "");
  std::printf("%-12s %9s %9s %6s | %9s %9s %9s | %9s %9s %9s\n", "case", "compile", "precomp", "tokens",
              "cold p50", "cold p99", "cold max", "warm p50", "warm p99", "warm max");
  std::vector<double> all_warm, all_cold, compiles, all_warm_wall;
  // One compiler for all cases, as in a server: terminal-rule mask entries
  // (JSON strings, numbers) are shared across schemas.
  CompilerOptions copts;
  copts.precompute = precompute;
  GrammarCompiler compiler(*vocab, copts);
  if (warmup) {
    double w0 = testing::ThreadCpuMicros();
    compiler.WarmUp();
    std::printf("warm-up (any-JSON mask cache, once per vocabulary): %.1f ms\n",
                (testing::ThreadCpuMicros() - w0) / 1000);
  }
  const std::unordered_map<std::string, int32_t> by_bytes = testing::TokensByBytes(**vocab);
  for (const Case& c : kCases) {
    double t0 = testing::ThreadCpuMicros();
    GrammarCompiler::Result r = std::string(c.kind) == "json"    ? compiler.CompileJsonSchema(c.source)
                                : std::string(c.kind) == "regex" ? compiler.CompileRegex(c.source)
                                                                 : compiler.CompileGbnf(c.source);
    double compile_us = testing::ThreadCpuMicros() - t0;
    if (!r.ok()) {
      std::printf("%-12s compile error: %s\n", c.name, r.status().ToString().c_str());
      continue;
    }
    compiles.push_back(compile_us);
    std::vector<int32_t> tokens = testing::GreedyTokenize(by_bytes, (*vocab)->max_token_length(), c.instance);
    TokenBitmask mask((*vocab)->size());
    std::vector<double> runs[2];
    bool ok = true;
    for (int run = 0; run < 2; ++run) {
      GrammarMatcher m(*r);
      for (size_t i = 0; i <= tokens.size(); ++i) {
        double s = testing::ThreadCpuMicros(), w = WallUs();
        m.FillNextTokenBitmask(&mask);
        runs[run].push_back(testing::ThreadCpuMicros() - s);
        if (run == 1) all_warm_wall.push_back(WallUs() - w);
        int32_t next = i < tokens.size() ? tokens[i] : (*vocab)->eos_ids()[0];
        if (!mask.Test(next) || !m.AcceptToken(next)) {
          std::printf("%-12s token %zu ('%s') rejected\n", c.name, i, (*vocab)->token(next).c_str());
          ok = false;
          break;
        }
      }
    }
    if (!ok) continue;
    all_cold.insert(all_cold.end(), runs[0].begin(), runs[0].end());
    all_warm.insert(all_warm.end(), runs[1].begin(), runs[1].end());
    std::printf("%-12s %7.2fms %9s %6zu | %7.1fus %7.1fus %7.1fus | %7.1fus %7.1fus %7.1fus\n", c.name,
                compile_us / 1000, precompute ? "incl." : "lazy", tokens.size(),
                testing::Percentile(runs[0], 0.5), testing::Percentile(runs[0], 0.99),
                testing::Percentile(runs[0], 1.0), testing::Percentile(runs[1], 0.5),
                testing::Percentile(runs[1], 0.99), testing::Percentile(runs[1], 1.0));
  }
  std::printf(
      "ALL          compile p50 %.2fms max %.2fms | cold p50 %.1fus p99 %.1fus | warm p50 %.1fus p99 %.1fus "
      "max %.1fus\n",
      testing::Percentile(compiles, 0.5) / 1000, testing::Percentile(compiles, 1.0) / 1000,
      testing::Percentile(all_cold, 0.5), testing::Percentile(all_cold, 0.99),
      testing::Percentile(all_warm, 0.5), testing::Percentile(all_warm, 0.99),
      testing::Percentile(all_warm, 1.0));
  std::printf("(times are thread CPU time; warm wall-clock p50 %.1fus p99 %.1fus)\n",
              testing::Percentile(all_warm_wall, 0.5), testing::Percentile(all_warm_wall, 0.99));
  return 0;
}
