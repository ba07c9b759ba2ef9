#include "jinja/builtins.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <initializer_list>
#include <limits>

namespace deepinfer::jinja {

Status Budget::Charge(int64_t steps) {
  if (steps < 0 || steps > limits_.max_steps - steps_) {
    steps_ = limits_.max_steps;
    return InvalidArgument("template exceeded its evaluation budget (" + std::to_string(limits_.max_steps) +
                           " steps; a runaway loop?)");
  }
  steps_ += steps;
  return Status::Ok();
}

Status Budget::ChargeString(size_t bytes) {
  if (bytes > limits_.max_output_bytes) {
    return InvalidArgument("template built a string longer than " + std::to_string(limits_.max_output_bytes) +
                           " bytes");
  }
  const auto b = static_cast<int64_t>(bytes);
  if (b > limits_.max_alloc_bytes - alloc_bytes_) {
    alloc_bytes_ = limits_.max_alloc_bytes;
    return InvalidArgument("template exceeded its memory budget (" + std::to_string(limits_.max_alloc_bytes) +
                           " bytes of strings)");
  }
  alloc_bytes_ += b;
  return Status::Ok();
}

const Value* CallArgs::Get(size_t index, const char* name) const {
  if (index < positional.size()) return &positional[index];
  if (name != nullptr && name[0] != '\0') {
    for (const auto& [k, v] : keyword) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

StatusOr<int> Compare(const Value& a, const Value& b) {
  auto numeric = [](const Value& v) { return v.is_number() || v.kind() == Value::Kind::kBool; };
  auto as_double = [](const Value& v) {
    return v.kind() == Value::Kind::kBool ? (v.bool_value() ? 1.0 : 0.0) : v.number();
  };
  if (numeric(a) && numeric(b)) {
    if (a.kind() == Value::Kind::kInt && b.kind() == Value::Kind::kInt) {
      return a.int_value() < b.int_value() ? -1 : a.int_value() > b.int_value() ? 1 : 0;
    }
    const double x = as_double(a), y = as_double(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const size_t n = std::min(a.list().size(), b.list().size());
    for (size_t i = 0; i < n; ++i) {
      DI_ASSIGN_OR_RETURN(int c, Compare(a.list()[i], b.list()[i]));
      if (c != 0) return c;
    }
    return a.list().size() < b.list().size() ? -1 : a.list().size() > b.list().size() ? 1 : 0;
  }
  return InvalidArgument(std::string("cannot compare a ") + a.TypeName() + " with a " + b.TypeName());
}

namespace {

// x.attr as a filter argument sees it: dict key, namespace attribute; a
// dotted path walks several levels.
Value GetAttrPath(const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    int64_t index = 0;
    auto res = std::from_chars(part.data(), part.data() + part.size(), index);
    const bool numeric = !part.empty() && res.ec == std::errc() && res.ptr == part.data() + part.size();
    cur = GetItem(cur, numeric && cur.is_list() ? Value::Int(index) : Value::String(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

StatusOr<int64_t> IntArg(const Value* v, int64_t dflt, const char* what) {
  if (v == nullptr || v->is_none() || v->is_undefined()) return dflt;
  if (v->kind() != Value::Kind::kInt) return InvalidArgument(std::string(what) + " must be an integer");
  return v->int_value();
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

StatusOr<Value> ToInt(const Value& v, const Value* dflt_v) {
  DI_ASSIGN_OR_RETURN(int64_t dflt, IntArg(dflt_v, 0, "int: default"));
  switch (v.kind()) {
    case Value::Kind::kInt:
      return v;
    case Value::Kind::kBool:
      return Value::Int(v.bool_value() ? 1 : 0);
    case Value::Kind::kFloat: {
      const double d = std::trunc(v.number());
      // The range check keeps the conversion defined (no UB on huge values).
      if (!(d >= -9.2e18 && d <= 9.2e18)) return Value::Int(dflt);
      return Value::Int(static_cast<int64_t>(d));
    }
    case Value::Kind::kString: {
      std::string s = v.str();
      s.erase(0, s.find_first_not_of(" \t\n\r"));
      s.erase(s.find_last_not_of(" \t\n\r") + 1);
      int64_t i = 0;
      const char* first = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
      auto res = std::from_chars(first, s.data() + s.size(), i);
      if (res.ec == std::errc() && res.ptr == s.data() + s.size() && !s.empty()) return Value::Int(i);
      double d = 0;
      auto fres = std::from_chars(first, s.data() + s.size(), d);
      if (fres.ec == std::errc() && fres.ptr == s.data() + s.size() && !s.empty()) {
        return ToInt(Value::Float(d), dflt_v);
      }
      return Value::Int(dflt);
    }
    default:
      return Value::Int(dflt);
  }
}

StatusOr<Value> ToFloat(const Value& v, const Value* dflt_v) {
  const double dflt = dflt_v != nullptr && dflt_v->is_number() ? dflt_v->number() : 0.0;
  switch (v.kind()) {
    case Value::Kind::kInt:
    case Value::Kind::kFloat:
      return Value::Float(v.number());
    case Value::Kind::kBool:
      return Value::Float(v.bool_value() ? 1 : 0);
    case Value::Kind::kString: {
      double d = 0;
      const std::string& s = v.str();
      auto res = std::from_chars(s.data(), s.data() + s.size(), d);
      if (res.ec == std::errc() && res.ptr == s.data() + s.size() && !s.empty()) return Value::Float(d);
      return Value::Float(dflt);
    }
    default:
      return Value::Float(dflt);
  }
}

// select/reject/selectattr/rejectattr: keep items whose test (or
// truthiness) equals `keep`.
StatusOr<Value> FilterBy(const Value& input, const CallArgs& args, bool by_attr, bool keep, Budget* budget) {
  DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(input, budget));
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    const Value* a = args.Get(0, nullptr);
    if (a == nullptr || !a->is_string()) return InvalidArgument("selectattr: expected an attribute name");
    attr = a->str();
    next = 1;
  }
  const Value* test = args.Get(next, nullptr);
  if (test != nullptr && !test->is_string()) return InvalidArgument("select: test name must be a string");
  CallArgs test_args;
  for (size_t i = next + 1; i < args.positional.size(); ++i) {
    test_args.positional.push_back(args.positional[i]);
  }
  ValueList out;
  for (const Value& item : items) {
    const Value subject = by_attr ? GetAttrPath(item, attr) : item;
    bool pass = subject.Truthy();
    if (test != nullptr) {
      DI_ASSIGN_OR_RETURN(pass, ApplyTest(test->str(), subject, test_args, budget));
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::List(std::move(out));
}

StatusOr<Value> MapFilter(const Value& input, const CallArgs& args, Budget* budget) {
  DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(input, budget));
  ValueList out;
  if (const Value* attr = args.Get(99, "attribute"); attr != nullptr) {
    if (!attr->is_string()) return InvalidArgument("map: attribute must be a string");
    const Value* dflt = args.Get(99, "default");
    for (const Value& item : items) {
      Value v = GetAttrPath(item, attr->str());
      out.push_back(v.is_undefined() && dflt != nullptr ? *dflt : v);
    }
    return Value::List(std::move(out));
  }
  const Value* filter = args.Get(0, nullptr);
  if (filter == nullptr || !filter->is_string()) {
    return InvalidArgument("map: expected a filter name or attribute=");
  }
  CallArgs rest;
  for (size_t i = 1; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
  rest.keyword = args.keyword;
  for (const Value& item : items) {
    DI_ASSIGN_OR_RETURN(Value v, ApplyFilter(filter->str(), item, rest, budget));
    out.push_back(std::move(v));
  }
  return Value::List(std::move(out));
}

StatusOr<Value> SortFilter(const Value& input, const CallArgs& args, Budget* budget) {
  DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(input, budget));
  const Value* reverse = args.Get(0, "reverse");
  const Value* case_sensitive = args.Get(1, "case_sensitive");
  const Value* attr = args.Get(2, "attribute");
  const bool fold = case_sensitive == nullptr || !case_sensitive->Truthy();
  std::vector<std::pair<Value, Value>> keyed;  // (key, item)
  for (const Value& item : items) {
    Value key = attr != nullptr && attr->is_string() ? GetAttrPath(item, attr->str()) : item;
    if (fold && key.is_string()) {
      DI_ASSIGN_OR_RETURN(key, CallMethod(key, "lower", CallArgs{}, budget));
    }
    keyed.emplace_back(std::move(key), item);
  }
  DI_RETURN_IF_ERROR(budget->Charge(static_cast<int64_t>(keyed.size()) * 20));
  Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    if (!error.ok()) return false;
    StatusOr<int> c = Compare(x.first, y.first);
    if (!c.ok()) {
      error = c.status();
      return false;
    }
    return *c < 0;
  });
  DI_RETURN_IF_ERROR(error);
  ValueList out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  if (reverse != nullptr && reverse->Truthy()) std::reverse(out.begin(), out.end());
  return Value::List(std::move(out));
}

StatusOr<Value> TojsonFilter(const Value& input, const CallArgs& args, Budget* budget) {
  DI_ASSIGN_OR_RETURN(int64_t indent, IntArg(args.Get(0, "indent"), -1, "tojson: indent"));
  if (indent > 64) return InvalidArgument("tojson: indent too large");
  const Value* sort_keys = args.Get(99, "sort_keys");
  DI_ASSIGN_OR_RETURN(std::string json,
                      input.ToJson(static_cast<int>(indent), sort_keys && sort_keys->Truthy()));
  DI_RETURN_IF_ERROR(budget->ChargeString(json.size()));
  return Value::String(std::move(json));
}

StatusOr<Value> IndentFilter(const std::string& s, const CallArgs& args, Budget* budget) {
  const Value* width_v = args.Get(0, "width");
  std::string pad;
  if (width_v != nullptr && width_v->is_string()) {
    pad = width_v->str();
  } else {
    DI_ASSIGN_OR_RETURN(int64_t width, IntArg(width_v, 4, "indent: width"));
    if (width < 0 || width > 256) return InvalidArgument("indent: width out of range");
    pad.assign(static_cast<size_t>(width), ' ');
  }
  const Value* first = args.Get(1, "first");
  const Value* blank = args.Get(2, "blank");
  std::string out;
  size_t start = 0;
  bool first_line = true;
  while (start <= s.size()) {
    const size_t nl = s.find('\n', start);
    const std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    const bool indent = (first_line ? first != nullptr && first->Truthy() : true) &&
                        (!line.empty() || (blank != nullptr && blank->Truthy()));
    DI_RETURN_IF_ERROR(budget->ChargeString(line.size() + pad.size() + 1));
    if (indent) out += pad;
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
    first_line = false;
  }
  return Value::String(std::move(out));
}

}  // namespace

StatusOr<Value> ApplyFilter(const std::string& name, const Value& input, const CallArgs& args,
                            Budget* budget) {
  const Value* a0 = args.Get(0, nullptr);
  if (name == "length" || name == "count") {
    switch (input.kind()) {
      case Value::Kind::kUndefined:
        return Value::Int(0);
      case Value::Kind::kString:
        return Value::Int(static_cast<int64_t>(CountCodePoints(input.str())));
      case Value::Kind::kList:
        return Value::Int(static_cast<int64_t>(input.list().size()));
      case Value::Kind::kDict:
        return Value::Int(static_cast<int64_t>(input.dict().size()));
      default:
        return InvalidArgument(std::string("length: a ") + input.TypeName() + " has no length");
    }
  }
  if (name == "default" || name == "d") {
    const Value* boolean = args.Get(1, "boolean");
    const bool use_default =
        input.is_undefined() || (boolean != nullptr && boolean->Truthy() && !input.Truthy());
    if (!use_default) return input;
    const Value* dflt = args.Get(0, "default_value");
    return dflt != nullptr ? *dflt : Value::String("");
  }
  if (name == "trim") return CallMethod(Value::String(input.ToString()), "strip", args, budget);
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    return CallMethod(Value::String(input.ToString()), name, CallArgs{}, budget);
  }
  if (name == "string") return Value::String(input.ToString());
  if (name == "safe") return input;
  if (name == "escape" || name == "e") return Value::String(HtmlEscape(input.ToString()));
  if (name == "tojson") return TojsonFilter(input, args, budget);
  if (name == "join") {
    DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(input, budget));
    const std::string sep = a0 != nullptr ? a0->ToString() : "";
    const Value* attr = args.Get(1, "attribute");
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string piece =
          (attr != nullptr && attr->is_string() ? GetAttrPath(items[i], attr->str()) : items[i]).ToString();
      DI_RETURN_IF_ERROR(budget->ChargeString(sep.size() + piece.size()));
      if (i > 0) out += sep;
      out += piece;
      if (out.size() > budget->limits().max_output_bytes) return InvalidArgument("join: result too long");
    }
    return Value::String(std::move(out));
  }
  if (name == "first" || name == "last") {
    DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(input, budget));
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "replace") return CallMethod(Value::String(input.ToString()), "replace", args, budget);
  if (name == "items") {
    if (input.is_undefined()) return Value::List({});
    if (!input.is_dict()) {
      return InvalidArgument(std::string("items: expected a dict, got a ") + input.TypeName());
    }
    return CallMethod(input, "items", CallArgs{}, budget);
  }
  if (name == "list") {
    DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(input, budget));
    return Value::List(std::move(items));
  }
  if (name == "reverse") {
    if (input.is_string()) {
      std::vector<std::string> cps = SplitCodePoints(input.str());
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return Value::String(std::move(out));
    }
    DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(input, budget));
    std::reverse(items.begin(), items.end());
    return Value::List(std::move(items));
  }
  if (name == "select" || name == "reject") return FilterBy(input, args, false, name == "select", budget);
  if (name == "selectattr" || name == "rejectattr") {
    return FilterBy(input, args, true, name == "selectattr", budget);
  }
  if (name == "map") return MapFilter(input, args, budget);
  if (name == "sort") return SortFilter(input, args, budget);
  if (name == "unique") {
    DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(input, budget));
    const auto n = static_cast<int64_t>(items.size());
    DI_RETURN_IF_ERROR(budget->Charge(n > 100000 ? budget->limits().max_steps : n * n));
    ValueList out;
    for (const Value& v : items) {
      if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return Equal(o, v); })) out.push_back(v);
    }
    return Value::List(std::move(out));
  }
  if (name == "int") return ToInt(input, args.Get(0, "default"));
  if (name == "float") return ToFloat(input, args.Get(0, "default"));
  if (name == "abs") {
    if (input.kind() == Value::Kind::kInt) {
      if (input.int_value() == std::numeric_limits<int64_t>::min()) {
        return InvalidArgument("abs: integer overflow");
      }
      return Value::Int(input.int_value() < 0 ? -input.int_value() : input.int_value());
    }
    if (input.kind() == Value::Kind::kFloat) return Value::Float(std::fabs(input.number()));
    return InvalidArgument(std::string("abs: expected a number, got a ") + input.TypeName());
  }
  if (name == "round") {
    if (!input.is_number()) return InvalidArgument("round: expected a number");
    DI_ASSIGN_OR_RETURN(int64_t precision, IntArg(args.Get(0, "precision"), 0, "round: precision"));
    if (precision < 0 || precision > 15) return InvalidArgument("round: precision out of range");
    const Value* method = args.Get(1, "method");
    const std::string m = method != nullptr && method->is_string() ? method->str() : "common";
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = input.number() * scale;
    const double r = m == "floor"  ? std::floor(x)
                     : m == "ceil" ? std::ceil(x)
                                   : std::nearbyint(x);  // Python's round(): half to even
    return Value::Float(r / scale);
  }
  if (name == "indent") return IndentFilter(input.ToString(), args, budget);
  if (name == "sum") {
    DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(input, budget));
    const Value* attr = args.Get(0, "attribute");
    double total = 0;
    bool all_int = true;
    int64_t itotal = 0;
    for (const Value& item : items) {
      const Value v = attr != nullptr && attr->is_string() ? GetAttrPath(item, attr->str()) : item;
      if (!v.is_number()) return InvalidArgument("sum: items must be numbers");
      total += v.number();
      if (v.kind() != Value::Kind::kInt || __builtin_add_overflow(itotal, v.int_value(), &itotal)) {
        all_int = false;
      }
    }
    return all_int ? Value::Int(itotal) : Value::Float(total);
  }
  return InvalidArgument("unknown filter '" + name + "'");
}

StatusOr<bool> ApplyTest(const std::string& name, const Value& v, const CallArgs& args, Budget* budget) {
  using K = Value::Kind;
  const Value* a0 = args.Get(0, nullptr);
  auto need_arg = [&]() -> Status {
    return a0 == nullptr ? InvalidArgument("test '" + name + "' needs an argument") : Status::Ok();
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.kind() == K::kBool;
  if (name == "true") return v.kind() == K::kBool && v.bool_value();
  if (name == "false") return v.kind() == K::kBool && !v.bool_value();
  if (name == "integer") return v.kind() == K::kInt;
  if (name == "float") return v.kind() == K::kFloat;
  if (name == "number") return v.is_number() || v.kind() == K::kBool;
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "sequence") return v.is_list() || v.is_string() || v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_string() || v.is_dict();
  if (name == "callable") return v.kind() == K::kCallable;
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    DI_ASSIGN_OR_RETURN(Value converted, CallMethod(v, name, CallArgs{}, budget));
    return converted.str() == v.str();
  }
  if (name == "odd" || name == "even") {
    if (v.kind() != K::kInt) return InvalidArgument("test '" + name + "' needs an integer");
    return (v.int_value() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    DI_RETURN_IF_ERROR(need_arg());
    if (v.kind() != K::kInt || a0->kind() != K::kInt || a0->int_value() == 0) {
      return InvalidArgument("divisibleby: needs integers and a non-zero divisor");
    }
    if (a0->int_value() == -1) return true;
    return v.int_value() % a0->int_value() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") {
    DI_RETURN_IF_ERROR(need_arg());
    return Equal(v, *a0);
  }
  if (name == "ne" || name == "!=") {
    DI_RETURN_IF_ERROR(need_arg());
    return !Equal(v, *a0);
  }
  if (name == "sameas") {
    DI_RETURN_IF_ERROR(need_arg());
    return v.kind() == a0->kind() && Equal(v, *a0);
  }
  if (name == "lt" || name == "lessthan" || name == "le" || name == "gt" || name == "greaterthan" ||
      name == "ge") {
    DI_RETURN_IF_ERROR(need_arg());
    DI_ASSIGN_OR_RETURN(int c, Compare(v, *a0));
    if (name == "lt" || name == "lessthan") return c < 0;
    if (name == "le") return c <= 0;
    if (name == "gt" || name == "greaterthan") return c > 0;
    return c >= 0;
  }
  if (name == "in") {
    DI_RETURN_IF_ERROR(need_arg());
    if (a0->is_string()) {
      if (!v.is_string()) return InvalidArgument("'in <string>' needs a string on the left");
      return a0->str().find(v.str()) != std::string::npos;
    }
    if (a0->is_dict()) return v.is_string() && a0->Find(v.str()) != nullptr;
    DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(*a0, budget));
    return std::any_of(items.begin(), items.end(), [&](const Value& x) { return Equal(x, v); });
  }
  return InvalidArgument("unknown test '" + name + "'");
}

namespace {
bool OneOf(const std::string& name, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (name == n) return true;
  }
  return false;
}
}  // namespace

// Kept in sync with ApplyFilter / ApplyTest (jinja_test checks every name).
bool IsKnownFilter(const std::string& name) {
  return OneOf(name, {"abs",     "capitalize", "count",  "d",      "default",    "e",          "escape",
                      "first",   "float",      "indent", "int",    "items",      "join",       "last",
                      "length",  "list",       "lower",  "map",    "reject",     "rejectattr", "replace",
                      "reverse", "round",      "safe",   "select", "selectattr", "sort",       "string",
                      "sum",     "title",      "tojson", "trim",   "unique",     "upper"});
}

bool IsKnownTest(const std::string& name) {
  return OneOf(name, {"!=",      "==",      "boolean",   "callable", "defined",  "divisibleby", "eq",
                      "equalto", "even",    "false",     "float",    "ge",       "greaterthan", "gt",
                      "in",      "integer", "iterable",  "le",       "lessthan", "lower",       "lt",
                      "mapping", "ne",      "none",      "number",   "odd",      "sameas",      "sequence",
                      "string",  "true",    "undefined", "upper"});
}

bool IsGlobalFunction(const std::string& name) {
  return name == "range" || name == "namespace" || name == "raise_exception" || name == "strftime_now" ||
         name == "dict";
}

StatusOr<Value> CallGlobalFunction(const std::string& name, const CallArgs& args, Budget* budget) {
  if (name == "raise_exception") {
    const Value* msg = args.Get(0, "message");
    return InvalidArgument("template raised an exception: " + (msg != nullptr ? msg->ToString() : ""));
  }
  if (name == "range") {
    int64_t bounds[3] = {0, 0, 1};
    const size_t n = args.positional.size();
    if (n < 1 || n > 3) return InvalidArgument("range: expected 1 to 3 arguments");
    for (size_t i = 0; i < n; ++i) {
      if (args.positional[i].kind() != Value::Kind::kInt) {
        return InvalidArgument("range: arguments must be integers");
      }
    }
    if (n == 1) {
      bounds[1] = args.positional[0].int_value();
    } else {
      bounds[0] = args.positional[0].int_value();
      bounds[1] = args.positional[1].int_value();
      if (n == 3) bounds[2] = args.positional[2].int_value();
    }
    const int64_t start = bounds[0], stop = bounds[1], step = bounds[2];
    if (step == 0) return InvalidArgument("range: step must not be zero");
    // Element count in long double avoids overflow on extreme bounds.
    const long double span = static_cast<long double>(stop) - static_cast<long double>(start);
    const long double count_ld = span / static_cast<long double>(step);
    const int64_t count =
        count_ld <= 0 ? 0 : static_cast<int64_t>(std::min<long double>(std::ceil(count_ld), 9e18L));
    DI_RETURN_IF_ERROR(budget->Charge(count));
    ValueList out;
    out.reserve(static_cast<size_t>(count));
    int64_t cur = start;
    for (int64_t i = 0; i < count; ++i) {
      out.push_back(Value::Int(cur));
      if (__builtin_add_overflow(cur, step, &cur)) break;
    }
    return Value::List(std::move(out));
  }
  if (name == "namespace" || name == "dict") {
    Value result = name == "namespace" ? Value::NewNamespace() : Value();
    ValueDict entries;
    if (const Value* init = args.Get(0, nullptr); init != nullptr) {
      if (!init->is_dict()) return InvalidArgument(name + ": positional argument must be a dict");
      entries = init->dict();
    }
    for (const auto& [k, v] : args.keyword) {
      if (v.kind() == Value::Kind::kNamespace) {
        return InvalidArgument(name + ": a namespace cannot hold a namespace");
      }
      entries.emplace_back(k, v);
    }
    if (name == "dict") return Value::Dict(std::move(entries));
    for (auto& [k, v] : entries) result.ns()[k] = std::move(v);
    return result;
  }
  if (name == "strftime_now") {
    const Value* fmt = args.Get(0, "format");
    if (fmt == nullptr || !fmt->is_string() || fmt->str().size() > 128) {
      return InvalidArgument("strftime_now: expected a format string (at most 128 bytes)");
    }
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    char buf[512];
    const size_t len = std::strftime(buf, sizeof(buf), fmt->str().c_str(), &tm);
    return Value::String(std::string(buf, len));
  }
  return InvalidArgument("unknown function '" + name + "'");
}

}  // namespace deepinfer::jinja
