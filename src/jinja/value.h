// jinja::Value: the dynamic value type of the Jinja subset engine, with the
// Python semantics chat templates rely on (truthiness, ==, str(), repr(),
// json.dumps). Lists and dicts are immutable once built and share their
// storage; only namespace() objects are mutable, and they can never be
// stored inside another value, so values form no cycles. Every container
// records its nesting depth, which the evaluator bounds (eval.h), so
// recursive helpers here (repr, ToJson, equality) have bounded depth.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace deepinfer::jinja {

struct MacroNode;  // ast.h
class Value;

using ValueList = std::vector<Value>;
using ValueDict = std::vector<std::pair<std::string, Value>>;  // insertion-ordered, unique keys
using Namespace = std::map<std::string, Value>;

// A callable: a built-in global function (by name) or a template macro.
struct Callable {
  std::string builtin;               // "range", "namespace", ... when macro == nullptr
  const MacroNode* macro = nullptr;  // owned by the parsed template
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

  Value() = default;  // undefined
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double d);
  static Value String(std::string s);
  static Value List(ValueList items);
  static Value Dict(ValueDict items);  // later duplicates of a key replace earlier ones
  static Value NewNamespace();
  static Value Function(Callable c);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }

  bool bool_value() const { return b_; }
  int64_t int_value() const { return i_; }
  double number() const { return kind_ == Kind::kFloat ? d_ : static_cast<double>(i_); }
  const std::string& str() const { return *static_cast<const std::string*>(ptr_.get()); }
  const ValueList& list() const { return *static_cast<const ValueList*>(ptr_.get()); }
  const ValueDict& dict() const { return *static_cast<const ValueDict*>(ptr_.get()); }
  Namespace& ns() const { return *static_cast<Namespace*>(ptr_.get()); }
  const Callable& callable() const { return *static_cast<const Callable*>(ptr_.get()); }

  // Nesting depth: 0 for scalars, 1 + deepest child for lists and dicts.
  int depth() const { return depth_; }
  // Approximate flattened size in bytes (strings: length, scalars: 8,
  // containers: sum of their items, saturating). Shared items count every
  // time they appear, so this bounds the cost of repr/ToJson/Equal even for
  // values built by repeatedly nesting one list.
  uint64_t weight() const { return weight_; }
  // Dict lookup; nullptr when absent.
  const Value* Find(const std::string& key) const;

  // Python truthiness; undefined is false.
  bool Truthy() const;
  // Python str(): strings as-is, None -> "None", undefined -> "".
  std::string ToString() const;
  // Python repr(): 'quoted' strings, [a, b], {'k': v}.
  std::string Repr() const;
  // json.dumps(v, ensure_ascii=False) as Hugging Face's tojson calls it;
  // indent < 0 means one line. Undefined, namespaces and callables are errors.
  StatusOr<std::string> ToJson(int indent, bool sort_keys) const;
  const char* TypeName() const;

 private:
  // Kept small (40 bytes): loops and lists hold many values. The payload
  // of strings, lists, dicts, namespaces and callables is shared.
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int depth_ = 0;
  uint64_t weight_ = 8;
  union {
    int64_t i_ = 0;
    double d_;
  };
  std::shared_ptr<void> ptr_;
};

// Python ==: numbers compare by value across int/float/bool, containers
// element-wise, undefined equals only undefined.
bool Equal(const Value& a, const Value& b);

// Python float repr (shortest round-trip digits, "1.0", "1e-05", "inf").
std::string FloatRepr(double d);

// UTF-8 helpers for Python's code-point string semantics.
// Bytes of the code point starting at s[i] (1 for a malformed byte).
size_t CodePointLength(const std::string& s, size_t i);
std::vector<std::string> SplitCodePoints(const std::string& s);
size_t CountCodePoints(const std::string& s);

}  // namespace deepinfer::jinja
