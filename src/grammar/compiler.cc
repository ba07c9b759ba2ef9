#include "grammar/compiler.h"

#include "grammar/gbnf.h"
#include "grammar/lark.h"
#include "grammar/regex.h"

namespace deepinfer::grammar {

StatusOr<Grammar> ChoiceToGrammar(const std::vector<std::string>& choices) {
  if (choices.empty()) return InvalidArgument("choice: the list of strings is empty");
  Grammar g;
  std::vector<ExprId> alts;
  for (const std::string& c : choices) alts.push_back(g.Literal(c));
  g.set_root(g.DefineRule("root", g.Choice(std::move(alts))));
  return g;
}

GrammarCompiler::GrammarCompiler(std::shared_ptr<const Vocabulary> vocab, CompilerOptions options)
    : vocab_(std::move(vocab)),
      options_(options),
      shared_masks_(std::make_shared<SharedMaskCache>()),
      string_profiles_(std::make_shared<const StringProfiles>(vocab_)) {}

void GrammarCompiler::WarmUp() {
  for (bool ws : {false, true}) {
    JsonSchemaOptions o;
    o.any_whitespace = ws;
    Result r = CompileJsonSchema("{}", o);
    if (r.ok()) (*r)->Precompute();
  }
  // Reference string profiles (bounded strings, additional-property keys)
  // and the `format` strings, whose automata are the same in every schema.
  const JsonStringModel& model = JsonStringModel::Get();
  // Every U state but the end (after the closing quote, no mask needed):
  // positions inside escapes and UTF-8 characters read these (~2 ms in all
  // beyond the body's on 128k).
  for (uint32_t u = 0; u < model.num_states(); ++u) {
    if (u != model.end()) string_profiles_->Get(u);
  }
  for (const char* f : {"date", "time", "date-time", "email", "uuid", "uri", "ipv4", "ipv6"}) {
    Result r = CompileJsonSchema(std::string("{\"type\":\"string\",\"format\":\"") + f + "\"}");
    if (r.ok()) (*r)->PrecomputeTerminal();
  }
}

GrammarCompiler::Result GrammarCompiler::CompileGrammar(const Grammar& grammar) {
  Deadline deadline(options_.limits.time_limit_s);
  DI_ASSIGN_OR_RETURN(GrammarAutomaton automaton, BuildAutomaton(grammar, options_.limits, deadline));
  auto compiled =
      std::make_shared<const CompiledGrammar>(std::move(automaton), vocab_, shared_masks_, string_profiles_);
  if (options_.precompute) compiled->Precompute();
  return std::shared_ptr<const CompiledGrammar>(compiled);
}

template <typename BuildFn>
GrammarCompiler::Result GrammarCompiler::CompileCached(const std::string& key, BuildFn&& build) {
  {
    MutexLock lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  // Built outside the lock: a slow schema must not block other requests.
  StatusOr<Grammar> grammar = build();
  if (!grammar.ok()) return grammar.status();
  DI_ASSIGN_OR_RETURN(std::shared_ptr<const CompiledGrammar> compiled, CompileGrammar(*grammar));
  MutexLock lock(mutex_);
  if (cache_.size() >= options_.max_cache_entries) cache_.clear();  // simple bound
  auto [it, inserted] = cache_.emplace(key, compiled);
  return it->second;
}

GrammarCompiler::Result GrammarCompiler::CompileJsonSchema(std::string_view schema,
                                                           const JsonSchemaOptions& options) {
  std::string key = "json:" + options.CacheKey() + ":" + std::string(schema);
  return CompileCached(key, [&] { return JsonSchemaToGrammar(schema, options); });
}

GrammarCompiler::Result GrammarCompiler::CompileJsonObject(const JsonSchemaOptions& options) {
  return CompileJsonSchema(R"({"type":"object"})", options);
}

GrammarCompiler::Result GrammarCompiler::CompileRegex(std::string_view pattern) {
  return CompileCached("regex:" + std::string(pattern), [&] { return RegexToGrammar(pattern); });
}

GrammarCompiler::Result GrammarCompiler::CompileGbnf(std::string_view text) {
  return CompileCached("gbnf:" + std::string(text), [&] { return GbnfToGrammar(text); });
}

GrammarCompiler::Result GrammarCompiler::CompileLark(std::string_view text) {
  return CompileCached("lark:" + std::string(text), [&] { return LarkToGrammar(text); });
}

GrammarCompiler::Result GrammarCompiler::CompileChoice(const std::vector<std::string>& choices) {
  std::string key = "choice:";
  for (const std::string& c : choices) key += std::to_string(c.size()) + ":" + c;
  return CompileCached(key, [&] { return ChoiceToGrammar(choices); });
}

size_t GrammarCompiler::cache_size() const {
  MutexLock lock(mutex_);
  return cache_.size();
}

void GrammarCompiler::ClearCache() {
  MutexLock lock(mutex_);
  cache_.clear();
}

}  // namespace deepinfer::grammar
