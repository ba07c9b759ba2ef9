#include "grammar/compiler.h"

#include <type_traits>

#include "core/log.h"
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

GrammarCompiler::Result GrammarCompiler::CompileGrammar(const Grammar& grammar,
                                                        std::vector<RelaxedAssertion> relaxed) {
  Deadline deadline(options_.limits.time_limit_s);
  DI_ASSIGN_OR_RETURN(GrammarAutomaton automaton, BuildAutomaton(grammar, options_.limits, deadline));
  auto compiled = std::make_shared<const CompiledGrammar>(std::move(automaton), vocab_, shared_masks_,
                                                          string_profiles_, std::move(relaxed));
  if (options_.precompute) compiled->Precompute();
  return std::shared_ptr<const CompiledGrammar>(compiled);
}

template <typename T>
size_t VectorBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

size_t EstimatedBytes(const CompiledGrammar& grammar) {
  const GrammarAutomaton& a = grammar.automaton();
  size_t bytes = sizeof(CompiledGrammar) + VectorBytes(a.byte_edge_begin) + VectorBytes(a.byte_edges) +
                 VectorBytes(a.rule_edge_begin) + VectorBytes(a.rule_edges) + VectorBytes(a.is_final) +
                 VectorBytes(a.state_rule) + VectorBytes(a.rule_start) + VectorBytes(a.rule_end) +
                 VectorBytes(a.rule_nullable) + VectorBytes(a.rule_terminal) + VectorBytes(a.dense_offset) +
                 VectorBytes(a.dense_next) + VectorBytes(a.dense_loop);
  for (const std::string& sig : a.terminal_signature) bytes += sizeof(std::string) + sig.capacity();
  for (const std::string& name : a.rule_names) bytes += sizeof(std::string) + name.capacity();
  bytes += size_t{a.num_states()} * sizeof(void*);  // the per-state mask-cache slots
  bytes += grammar.num_cached() * (sizeof(PositionMask) + grammar.vocab().size() / 8);
  return bytes;
}

size_t GrammarCompiler::CacheBytesLocked() const {
  size_t total = 0;
  for (const auto& [key, entry] : cache_) total += EstimatedBytes(*entry.compiled);
  return total;
}

void GrammarCompiler::EvictForInsert(size_t incoming_bytes) {
  while (!cache_.empty() && (cache_.size() >= options_.max_cache_entries ||
                             CacheBytesLocked() + incoming_bytes > options_.max_cache_bytes)) {
    auto oldest = cache_.begin();
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    }
    cache_.erase(oldest);
  }
}

template <typename BuildFn>
GrammarCompiler::Result GrammarCompiler::CompileCached(const std::string& key, BuildFn&& build) {
  {
    MutexLock lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      it->second.last_use = ++use_clock_;
      return it->second.compiled;
    }
    if (auto it = failed_.find(key);
        it != failed_.end() && std::chrono::steady_clock::now() - it->second.when < options_.failed_ttl) {
      return it->second.status;
    }
  }
  // Built outside the lock: a slow schema must not block other requests.
  // `build` gives a Grammar, or a JsonSchemaGrammar with its relaxed list.
  auto built = build();
  Result compiled = Result(built.status());
  if constexpr (std::is_same_v<std::decay_t<decltype(*built)>, JsonSchemaGrammar>) {
    if (built.ok()) compiled = CompileGrammar(built->grammar, std::move(built->relaxed));
  } else {
    if (built.ok()) compiled = CompileGrammar(*built);
  }
  MutexLock lock(mutex_);
  if (!compiled.ok()) {
    // Remembered for failed_ttl, oldest forgotten first: the same source
    // fails the same way (a time-limit failure included: resending it must
    // not cost the budget again).
    if (options_.max_failed_entries == 0) return compiled.status();
    auto [it, inserted] =
        failed_.try_emplace(key, FailedEntry{compiled.status(), std::chrono::steady_clock::now()});
    if (!inserted) {
      it->second = FailedEntry{compiled.status(), std::chrono::steady_clock::now()};  // expired, failed again
    } else {
      if (failed_order_.size() < options_.max_failed_entries) {
        failed_order_.push_back(key);
      } else {
        failed_.erase(failed_order_[failed_next_]);
        failed_order_[failed_next_] = key;
        failed_next_ = (failed_next_ + 1) % failed_order_.size();
      }
    }
    return compiled.status();
  }
  failed_.erase(key);  // an expired failure that compiles now
  if (auto it = cache_.find(key); it != cache_.end()) return it->second.compiled;  // a concurrent twin won
  // A grammar larger than the whole budget is served but not kept.
  const size_t bytes = EstimatedBytes(**compiled);
  if (bytes > options_.max_cache_bytes) return compiled;
  EvictForInsert(bytes);
  cache_.emplace(key, CacheEntry{*compiled, ++use_clock_});
  return compiled;
}

GrammarCompiler::Result GrammarCompiler::CompileJsonSchema(std::string_view schema,
                                                           const JsonSchemaOptions& options) {
  std::string key = "json:" + options.CacheKey() + ":" + std::string(schema);
  return CompileCached(key, [&]() -> StatusOr<JsonSchemaGrammar> {
    DI_ASSIGN_OR_RETURN(JsonSchemaGrammar g, CompileJsonSchemaGrammar(schema, options));
    // Once per compiled schema (then cached): the server log names them.
    if (!g.relaxed.empty()) {
      DI_LOG_WARN("json schema (not strict): relaxed assertions: %s", FormatRelaxed(g.relaxed).c_str());
    }
    return g;
  });
}

GrammarCompiler::Result GrammarCompiler::CompileTaggedJson(const TaggedJsonFormat& format,
                                                           const JsonSchemaOptions& options) {
  std::string key = "tagged:" + options.CacheKey() + ":" + format.CacheKey();
  return CompileCached(key, [&] { return TaggedJsonToGrammar(format, options); });
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

size_t GrammarCompiler::failed_cache_size() const {
  MutexLock lock(mutex_);
  return failed_.size();
}

size_t GrammarCompiler::cache_bytes() const {
  MutexLock lock(mutex_);
  return CacheBytesLocked();
}

void GrammarCompiler::ClearCache() {
  MutexLock lock(mutex_);
  cache_.clear();
  failed_.clear();
  failed_order_.clear();
  failed_next_ = 0;
}

}  // namespace deepinfer::grammar
