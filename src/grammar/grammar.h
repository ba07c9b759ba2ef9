// Grammar IR: the one representation every front end (regex, JSON Schema,
// GBNF, choice) compiles to, and the input of the automaton builder.
//
// A Grammar is a set of named rules; each rule's body is an expression over
// bytes. Expressions live in a flat arena inside the Grammar and are referred
// to by ExprId, so front ends build them bottom-up with the factory methods
// below and may share a sub-expression between parents (it is a DAG; the
// builder copies it where used). Repetition is a node with bounds, expanded
// by the automaton builder under a size budget (see automaton.h).
//
// Bytes, not characters: Unicode text is handled by the front ends, which
// turn code-point ranges into UTF-8 byte sequences (utf8.h).
//
// Thread-safety: a Grammar is a plain value; const methods may be called
// concurrently, mutation needs external synchronization.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::grammar {

using ExprId = int32_t;
using RuleId = int32_t;

struct ByteRange {
  uint8_t lo = 0;
  uint8_t hi = 0;  // inclusive
};

enum class ExprKind : uint8_t {
  kEmpty,      // matches the empty string
  kBytes,      // one byte from `ranges` (a byte class)
  kSequence,   // children in order
  kChoice,     // one of the children
  kRuleRef,    // the rule `rule`
  kRepeat,     // children[0] repeated min..max times (max = kUnbounded: no limit)
  kNothing,    // matches nothing (e.g. an empty enum); pruned by the builder
  kAutomaton,  // the explicit automaton `automaton(rule)` (rule = its index)
};

struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  RuleId rule = -1;
  int32_t min = 0;
  int32_t max = 0;
  std::vector<ByteRange> ranges;
  std::vector<ExprId> children;
};

// An explicit automaton over bytes, for languages a front end computes
// itself (e.g. intersections and complements of key patterns): state 0 is
// the start; may be nondeterministic; states need not be trimmed.
struct ByteAutomaton {
  struct Edge {
    uint8_t lo;
    uint8_t hi;  // inclusive
    uint32_t target;
  };
  std::vector<std::vector<Edge>> edges;  // per state
  std::vector<uint8_t> is_final;         // per state
};

class Grammar {
 public:
  static constexpr int32_t kUnbounded = -1;

  // Declares a rule (body unset = kNothing). Names are for messages and
  // ToString(); they need not be unique (front ends make them unique).
  RuleId AddRule(std::string name);
  void SetBody(RuleId rule, ExprId body);
  // Declares and defines in one step.
  RuleId DefineRule(std::string name, ExprId body);
  // -1 if absent.
  RuleId FindRule(std::string_view name) const;

  void set_root(RuleId rule) { root_ = rule; }
  RuleId root() const { return root_; }

  // Expression factories. Sequence/Choice flatten trivial cases.
  ExprId Empty();
  ExprId Nothing();
  ExprId Bytes(std::vector<ByteRange> ranges);
  ExprId Byte(uint8_t b) { return Bytes({{b, b}}); }
  ExprId Literal(std::string_view bytes);
  // By value: callers build the list and move it in.
  ExprId Sequence(std::vector<ExprId> children);
  ExprId Choice(std::vector<ExprId> children);
  ExprId Ref(RuleId rule);
  ExprId Repeat(ExprId child, int32_t min, int32_t max);
  ExprId Star(ExprId child) { return Repeat(child, 0, kUnbounded); }
  ExprId Plus(ExprId child) { return Repeat(child, 1, kUnbounded); }
  ExprId Optional(ExprId child) { return Repeat(child, 0, 1); }
  // kNothing if the automaton has no state.
  ExprId Automaton(ByteAutomaton automaton);

  const Expr& expr(ExprId id) const { return exprs_[id]; }
  const ByteAutomaton& automaton(int32_t index) const { return automata_[index]; }
  size_t num_exprs() const { return exprs_.size(); }
  size_t num_rules() const { return rule_names_.size(); }
  const std::string& rule_name(RuleId r) const { return rule_names_[r]; }
  ExprId rule_body(RuleId r) const { return rule_bodies_[r]; }

  // Copies every rule, expression and automaton of `other` into this
  // grammar (rule names prefixed by `prefix`) and returns the copy of its
  // root: how a grammar embeds another (a JSON Schema inside a tool call).
  RuleId Import(const Grammar& other, const std::string& prefix);

  // EBNF-like dump for debugging and error messages; also a stable cache key.
  std::string ToString() const;

 private:
  ExprId Add(Expr e);

  std::vector<Expr> exprs_;
  std::vector<ByteAutomaton> automata_;
  std::vector<std::string> rule_names_;
  std::vector<ExprId> rule_bodies_;
  RuleId root_ = -1;
};

}  // namespace deepinfer::grammar
