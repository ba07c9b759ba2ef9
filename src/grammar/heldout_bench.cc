// heldout_bench: the held-out corpus (testdata/heldout_schemas.json) on a
// real vocabulary, token by token, as a server would see it.
//
//   build/src/grammar/heldout_bench [tokenizer.json(.gz) [NAME_SUBSTRING]]
//
// Per schema: compile time (front end + automaton, best effort as
// `deepinfer constrain` without --strict), then the valid instance's tokens (greedy longest-match) walked
// with the full-vocabulary mask before every token and at the end (EOS must
// be allowed), then the invalid instance (must be refused somewhere). Mask
// times are thread CPU time of the first walk ("cold": the lazy mask cache
// fills as it goes, the worst case of a first request). Every schema gets a
// fresh, warmed-up compiler (see Run).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
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

// Walks `tokens` then EOS under the mask; true if all are allowed.
bool Walk(const std::shared_ptr<const CompiledGrammar>& g, const std::vector<int32_t>& tokens,
          std::vector<double>* mask_us) {
  GrammarMatcher m(g);
  TokenBitmask mask(g->vocab().size());
  for (size_t i = 0; i <= tokens.size(); ++i) {
    double s = testing::ThreadCpuMicros();
    m.FillNextTokenBitmask(&mask);
    if (mask_us) mask_us->push_back(testing::ThreadCpuMicros() - s);
    int32_t next = i < tokens.size() ? tokens[i] : g->vocab().eos_ids()[0];
    if (!mask.Test(next) || !m.AcceptToken(next)) return false;
  }
  return true;
}

int Run(int argc, char** argv) {
  std::string path = std::string(DI_SHARED_DIR) + "/models/tokenizers/llama3/tokenizer.json.gz";
  if (argc > 1) path = argv[1];
  auto vocab = testing::LoadTokenizerJson(
      path, {"<|eot_id|>", "<|end_of_text|>", "</s>", "<|endoftext|>", "<|im_end|>"});
  if (!vocab.ok()) {
    std::fprintf(stderr, "%s\n", vocab.status().ToString().c_str());
    return 1;
  }
  std::ifstream in(std::string(DI_SOURCE_DIR) + "/src/grammar/testdata/heldout_schemas.json");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::ordered_json corpus = nlohmann::ordered_json::parse(ss.str());
  const std::unordered_map<std::string, int32_t> by_bytes = testing::TokensByBytes(**vocab);
  std::vector<double> compiles, p99s;
  int passed = 0, over_1ms = 0, relaxed = 0;
  const char* only = argc > 2 ? argv[2] : nullptr;  // substring of the names to run
  for (const auto& entry : corpus) {
    std::string name = entry["name"].get<std::string>();
    if (only && name.find(only) == std::string::npos) continue;
    // A fresh compiler per schema, warmed up as StructuredOutput::Create
    // does (not timed): each schema is a first request, as in one
    // `deepinfer constrain --check` run, and entries filled by the schemas
    // before it cannot hide its first visits.
    GrammarCompiler compiler(*vocab);
    compiler.WarmUp();
    double t0 = testing::ThreadCpuMicros();
    // Best effort, as `deepinfer constrain --check` without --strict.
    JsonSchemaOptions options;
    options.strict = false;
    auto g = compiler.CompileJsonSchema(entry["schema"].dump(), options);
    double compile_us = testing::ThreadCpuMicros() - t0;
    if (!g.ok()) {
      std::printf("%-36s compile error: %s\n", name.c_str(), g.status().ToString().c_str());
      continue;
    }
    compiles.push_back(compile_us);
    std::vector<double> mask_us;
    bool valid_ok = Walk(
        *g, testing::GreedyTokenize(by_bytes, (*vocab)->max_token_length(), entry["valid"].dump()), &mask_us);
    bool invalid_ok =
        Walk(*g, testing::GreedyTokenize(by_bytes, (*vocab)->max_token_length(), entry["invalid"].dump()),
             nullptr);
    double p99 = testing::Percentile(mask_us, 0.99);
    p99s.push_back(p99);
    over_1ms += p99 > 1000;
    bool pass = valid_ok && !invalid_ok;
    relaxed += !(*g)->relaxed().empty();
    passed += pass;
    std::printf("%-36s compile %7.2fms  mask p50 %7.1fus p99 %7.1fus max %7.1fus  %s\n", name.c_str(),
                compile_us / 1000, testing::Percentile(mask_us, 0.5), p99, testing::Percentile(mask_us, 1.0),
                pass ? "pass" : (valid_ok ? "FAIL (accepts invalid)" : "FAIL (rejects valid)"));
  }
  std::printf("vocabulary %s (%zu tokens)\n", path.c_str(), (*vocab)->size());
  std::printf(
      "pass %d / %zu; compile p50 %.2fms max %.2fms; per-schema cold mask p99: median %.1fus max %.1fus; "
      "schemas with p99 > 1ms: %d; schemas with relaxed assertions: %d\n",
      passed, corpus.size(), testing::Percentile(compiles, 0.5) / 1000,
      testing::Percentile(compiles, 1.0) / 1000, testing::Percentile(p99s, 0.5),
      testing::Percentile(p99s, 1.0), over_1ms, relaxed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {  // e.g. a malformed corpus file
    std::fprintf(stderr, "heldout_bench: %s\n", e.what());
    return 1;
  }
}
