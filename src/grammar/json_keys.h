// Object keys under patternProperties / propertyNames, enforced exactly.
//
// JSON Schema applies to a property every patternProperties schema whose
// pattern matches its name (search semantics), and additionalProperties
// only when no pattern matches and the name is not declared; propertyNames
// constrains every name. So the value grammar of an additional property
// depends on *which* patterns its key matches: the key space is split into
// regions, one per set S of matching patterns, and each region's key
// language is
//     canonical JSON strings  ∩  (∩ L(p), p in S)  ∩  (∩ ¬L(p), p not in S)
//     ∩  propertyNames  \  declared names
// built as a product of small deterministic automata (one per pattern, one
// per propertyNames keyword, the declared names, and the canonical string
// encoding — each character has one spelling, so complements are taken on
// decoded text, not on spellings). Each region becomes an explicit
// automaton in the IR (Grammar::Automaton).
//
// Keys are written with canonical escapes only (as nlohmann's dump writes
// them: short escapes where JSON has them, else \u00xx in lowercase).
//
// Errors: kUnimplemented for propertyNames keywords other than type string,
// pattern, format, minLength/maxLength, enum/const; kResourceExhausted when
// an automaton or the product is too large; pattern syntax errors as the
// regex front end reports them.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/automaton.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

class JsonKeyLanguages {
 public:
  struct Region {
    std::vector<int> patterns;  // indices into the patterns, ascending
    ExprId key;                 // the quoted key, in the target grammar
  };

  // `property_names` may be null (no constraint).
  static StatusOr<JsonKeyLanguages> Build(const std::vector<std::string>& patterns,
                                          const nlohmann::ordered_json* property_names);

  // Patterns whose language contains `name` (exact, same automata).
  std::vector<int> Matching(const std::string& name) const;
  // Whether `name` satisfies propertyNames.
  bool NameAllowed(const std::string& name) const;
  // Key expressions of every non-empty region for keys other than
  // `declared`, added to `g`.
  StatusOr<std::vector<Region>> Regions(const std::vector<std::string>& declared, Grammar* g) const;

 private:
  // Dense automata over quoted keys (terminal rule 0 of each).
  std::shared_ptr<const GrammarAutomaton> canonical_;
  std::vector<std::shared_ptr<const GrammarAutomaton>> patterns_;
  std::vector<std::shared_ptr<const GrammarAutomaton>> name_constraints_;
  bool no_names_ = false;  // propertyNames: false (or an impossible type)
};

}  // namespace deepinfer::grammar
