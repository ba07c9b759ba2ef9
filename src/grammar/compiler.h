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
// kResourceExhausted when a limit (size, time) is hit. Nothing is cached on
// error. Thread-safe: calls may run concurrently; the same source compiled
// twice yields the same shared CompiledGrammar.
#pragma once

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
#include "grammar/vocabulary.h"

namespace deepinfer::grammar {

struct CompilerOptions {
  BuildLimits limits;       // includes the compile time limit (default 5 s)
  bool precompute = false;  // fill the whole mask cache at compile time
  size_t max_cache_entries = 256;
};

class GrammarCompiler {
 public:
  explicit GrammarCompiler(std::shared_ptr<const Vocabulary> vocab, CompilerOptions options = {});

  using Result = StatusOr<std::shared_ptr<const CompiledGrammar>>;
  Result CompileJsonSchema(std::string_view schema, const JsonSchemaOptions& options = {});
  Result CompileJsonObject(const JsonSchemaOptions& options = {});  // any JSON object
  Result CompileRegex(std::string_view pattern);
  Result CompileGbnf(std::string_view text);
  Result CompileLark(std::string_view text);
  Result CompileChoice(const std::vector<std::string>& choices);
  // Uncached: an IR built by the caller.
  Result CompileGrammar(const Grammar& grammar);

  size_t cache_size() const EXCLUDES(mutex_);
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
  std::map<std::string, std::shared_ptr<const CompiledGrammar>> cache_ GUARDED_BY(mutex_);
  std::shared_ptr<SharedMaskCache> shared_masks_;
  std::shared_ptr<const StringProfiles> string_profiles_;
};

// Vocabulary-free helpers (tests, fuzzing): front end + automaton build.
StatusOr<Grammar> ChoiceToGrammar(const std::vector<std::string>& choices);

}  // namespace deepinfer::grammar
