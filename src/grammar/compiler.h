// GrammarCompiler: front ends -> IR -> automaton -> CompiledGrammar for one
// vocabulary, with a cache keyed by (kind, source text, options).
//
// Usage:
//   GrammarCompiler compiler(vocab);
//   DI_ASSIGN_OR_RETURN(auto compiled, compiler.CompileJsonSchema(schema_text));
//   GrammarMatcher matcher(compiled);
//
// Every Compile* returns kInvalidArgument for malformed input, kUnimplemented
// for valid input using unsupported features (the message lists them), and
// kResourceExhausted when a limit (size, time) is hit. Failures are cached
// too for failed_ttl (the negative cache, max_failed_entries), so a client
// resending a grammar that ran out of its 5 s budget gets the same error at
// once; after the TTL it is tried again (a time-limit failure may have been
// the machine's load, not the grammar).
// Successes are cached under two bounds, entries and estimated bytes (the
// automaton plus the mask entries computed so far, EstimatedBytes); the least
// recently used go first. Thread-safe: calls may run concurrently; the same
// source compiled twice yields the same shared CompiledGrammar (while cached).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "core/thread_annotations.h"
#include "grammar/automaton.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/mask_cache.h"
#include "grammar/tagged_json.h"
#include "grammar/vocabulary.h"

namespace deepinfer::grammar {

struct CompilerOptions {
  BuildLimits limits;       // includes the compile time limit (default 5 s)
  bool precompute = false;  // fill the whole mask cache at compile time
  size_t max_cache_entries = 256;
  size_t max_cache_bytes = size_t{256} << 20;  // estimated bytes the cached grammars retain
  size_t max_failed_entries = 1024;            // failed compiles remembered
  std::chrono::seconds failed_ttl{60};         // for this long
};

// Bytes a compiled grammar holds: its automaton and the mask-cache entries
// computed so far (each counted as a bitset over the vocabulary, an upper
// bound for list entries). An estimate for the cache's byte budget.
size_t EstimatedBytes(const CompiledGrammar& grammar);

class GrammarCompiler {
 public:
  explicit GrammarCompiler(std::shared_ptr<const Vocabulary> vocab, CompilerOptions options = {});

  using Result = StatusOr<std::shared_ptr<const CompiledGrammar>>;
  // With options.strict = false, the assertions left out are in the
  // result's relaxed() (and logged once, when compiled).
  Result CompileJsonSchema(std::string_view schema, const JsonSchemaOptions& options = {});
  Result CompileJsonObject(const JsonSchemaOptions& options = {});  // any JSON object
  Result CompileRegex(std::string_view pattern);
  Result CompileGbnf(std::string_view text);
  Result CompileLark(std::string_view text);
  Result CompileChoice(const std::vector<std::string>& choices);
  Result CompileTaggedJson(const TaggedJsonFormat& format, const JsonSchemaOptions& options = {});
  // Uncached: an IR built by the caller (`relaxed`: what it leaves out of
  // its source, CompiledGrammar::relaxed).
  Result CompileGrammar(const Grammar& grammar, std::vector<RelaxedAssertion> relaxed = {});

  size_t cache_size() const EXCLUDES(mutex_);
  size_t failed_cache_size() const EXCLUDES(mutex_);
  // Sum of EstimatedBytes over the cached grammars, now.
  size_t cache_bytes() const EXCLUDES(mutex_);
  // Terminal-rule mask entries shared across this compiler's grammars.
  const SharedMaskCache& shared_mask_cache() const { return *shared_masks_; }
  // Compiles any-JSON and fills its mask cache, so the common JSON string /
  // number / key positions are warm for every later schema (~0.1 s once).
  void WarmUp();
  void ClearCache() EXCLUDES(mutex_);

 private:
  template <typename BuildFn>
  Result CompileCached(const std::string& key, BuildFn&& build) EXCLUDES(mutex_);

  std::shared_ptr<const Vocabulary> vocab_;
  CompilerOptions options_;
  mutable Mutex mutex_;
  struct CacheEntry {
    std::shared_ptr<const CompiledGrammar> compiled;
    uint64_t last_use = 0;
  };
  // Drops least recently used entries until one more, of `incoming_bytes`,
  // fits both bounds.
  void EvictForInsert(size_t incoming_bytes) REQUIRES(mutex_);
  size_t CacheBytesLocked() const REQUIRES(mutex_);
  std::map<std::string, CacheEntry> cache_ GUARDED_BY(mutex_);
  struct FailedEntry {
    Status status;
    std::chrono::steady_clock::time_point when;
  };
  std::map<std::string, FailedEntry> failed_ GUARDED_BY(mutex_);
  std::vector<std::string> failed_order_ GUARDED_BY(mutex_);  // insertion order, for eviction
  size_t failed_next_ GUARDED_BY(mutex_) = 0;                 // the oldest slot of failed_order_
  uint64_t use_clock_ GUARDED_BY(mutex_) = 0;
  std::shared_ptr<SharedMaskCache> shared_masks_;
  std::shared_ptr<const StringProfiles> string_profiles_;
};

// Vocabulary-free helpers (tests, fuzzing): front end + automaton build.
StatusOr<Grammar> ChoiceToGrammar(const std::vector<std::string>& choices);

}  // namespace deepinfer::grammar
