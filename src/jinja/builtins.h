// Jinja built-ins: filters (x | name), tests (x is name), methods of
// strings/dicts/lists (x.strip()) and global functions (range, namespace,
// raise_exception, strftime_now). Each returns a Status without location;
// the evaluator prefixes "line L:C". Work proportional to input size is
// charged to the render Budget so hostile templates stay bounded.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "jinja/value.h"

namespace deepinfer::jinja {

struct RenderLimits {
  size_t max_output_bytes = 16u << 20;           // rendered text, and any single value
  int64_t max_steps = 5'000'000;                 // expression evaluations + loop iterations + copied elements
  int64_t max_alloc_bytes = int64_t{256} << 20;  // bytes of all strings built during one render
  int max_call_depth = 8;                        // nested macro calls
  int max_value_depth = 32;                      // list/dict nesting of any value
};

// Counts the work of one render against RenderLimits.
class Budget {
 public:
  explicit Budget(const RenderLimits& limits) : limits_(limits) {}
  const RenderLimits& limits() const { return limits_; }
  Status Charge(int64_t steps);
  // Charges a newly built string of `bytes`; fails if it is too long.
  Status ChargeString(size_t bytes);

 private:
  RenderLimits limits_;
  int64_t steps_ = 0;
  int64_t alloc_bytes_ = 0;
};

using Kwargs = std::vector<std::pair<std::string, Value>>;

struct CallArgs {
  std::vector<Value> positional;
  Kwargs keyword;
  // Positional argument `index`, else keyword `name`, else nullptr.
  const Value* Get(size_t index, const char* name) const;
};

StatusOr<Value> ApplyFilter(const std::string& name, const Value& input, const CallArgs& args,
                            Budget* budget);
StatusOr<bool> ApplyTest(const std::string& name, const Value& input, const CallArgs& args, Budget* budget);
// A method of a string, dict or list; NotFound when `object` has no such
// method (the caller then reports it).
StatusOr<Value> CallMethod(const Value& object, const std::string& name, const CallArgs& args,
                           Budget* budget);
// Python ordering (<) for numbers, strings and lists: -1, 0 or 1; other
// pairs are an error.
StatusOr<int> Compare(const Value& a, const Value& b);
bool IsGlobalFunction(const std::string& name);
// Names ApplyFilter / ApplyTest implement; the parser rejects others, as
// Jinja does at compile time.
bool IsKnownFilter(const std::string& name);
bool IsKnownTest(const std::string& name);
StatusOr<Value> CallGlobalFunction(const std::string& name, const CallArgs& args, Budget* budget);

// Python-style attribute/item access used by the evaluator: dict keys,
// namespace attributes, list/string indices (negative from the end). Misses
// give undefined, as in Jinja.
Value GetItem(const Value& object, const Value& key);
// Python slicing; start/stop/step may be none/undefined.
StatusOr<Value> Slice(const Value& object, const Value& start, const Value& stop, const Value& step,
                      Budget* budget);
// The items of a for loop / "in" over lists, dict keys, string characters.
StatusOr<std::vector<Value>> Iterate(const Value& v, Budget* budget);

}  // namespace deepinfer::jinja
