#include "jinja/eval.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace deepinfer::jinja {
namespace {

constexpr char kLocationPrefix[] = "chat template line ";

Status At(int line, int column, const Status& s) {
  if (s.ok() || s.message().rfind(kLocationPrefix, 0) == 0) return s;
  return InvalidArgument(kLocationPrefix + std::to_string(line) + ":" + std::to_string(column) + ": " +
                         s.message());
}
Status At(const Expr& e, const Status& s) { return At(e.line, e.column, s); }
Status At(const Node& n, const Status& s) { return At(n.line, n.column, s); }

#define DI_JINJA_TRY(where, expr)             \
  do {                                        \
    ::deepinfer::Status di_s_ = (expr);       \
    if (!di_s_.ok()) return At(where, di_s_); \
  } while (0)

#define DI_JINJA_ASSIGN(where, lhs, expr) DI_JINJA_ASSIGN_IMPL(DI_CONCAT(di_jo_, __LINE__), where, lhs, expr)
// `tmp` is a name and `lhs` a declaration: neither can be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define DI_JINJA_ASSIGN_IMPL(tmp, where, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return At(where, tmp.status());    \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

enum class Flow { kNormal, kBreak, kContinue };

// Equality and ordering walk whole values; their cost is charged by size.
Status ChargeCompare(Budget* budget, const Value& a, const Value& b) {
  return budget->Charge(static_cast<int64_t>(std::min(a.weight(), b.weight()) / 64 + 1));
}

class Evaluator {
 public:
  Evaluator(const RenderLimits& limits, const Context& context) : budget_(limits) {
    frames_.emplace_back();
    for (const auto& [k, v] : context) frames_[0][k] = v;
  }

  StatusOr<std::string> Run(const Body& body) {
    std::string out;
    out_ = &out;
    StatusOr<Flow> flow = Exec(body);  // break/continue outside a loop are rejected by the parser
    out_ = nullptr;                    // `out` dies with this frame
    if (!flow.ok()) return flow.status();
    return out;
  }

 private:
  // ---- statements ----
  StatusOr<Flow> Exec(const Body& body) {
    for (const NodePtr& n : body) {
      DI_JINJA_TRY(*n, budget_.Charge(1));
      DI_ASSIGN_OR_RETURN(Flow flow, ExecNode(*n));
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  StatusOr<Flow> ExecNode(const Node& n) {
    switch (n.kind) {
      case Node::Kind::kText:
        DI_JINJA_TRY(n, Append(n.text));
        return Flow::kNormal;
      case Node::Kind::kOutput: {
        DI_ASSIGN_OR_RETURN(Value v, Eval(*n.expr));
        DI_JINJA_TRY(n, budget_.ChargeString(v.weight()));
        DI_JINJA_TRY(*n.expr, Append(v.ToString()));
        return Flow::kNormal;
      }
      case Node::Kind::kIf:
        for (size_t i = 0; i < n.conds.size(); ++i) {
          DI_ASSIGN_OR_RETURN(Value c, Eval(*n.conds[i]));
          if (c.Truthy()) return Exec(n.bodies[i]);
        }
        return Exec(n.else_body);
      case Node::Kind::kFor:
        return ExecFor(n);
      case Node::Kind::kSet: {
        DI_ASSIGN_OR_RETURN(Value v, Eval(*n.expr));
        if (n.attr.empty()) {
          frames_.back()[n.targets[0]] = std::move(v);
          return Flow::kNormal;
        }
        const Value target = Lookup(n.targets[0]);
        if (target.kind() != Value::Kind::kNamespace) {
          return At(n, InvalidArgument("cannot assign attribute '" + n.attr + "' of '" + n.targets[0] +
                                       "' (a " + target.TypeName() + ", not a namespace)"));
        }
        if (v.kind() == Value::Kind::kNamespace) {
          return At(n, InvalidArgument("a namespace cannot be stored inside a namespace"));
        }
        target.ns()[n.attr] = std::move(v);
        return Flow::kNormal;
      }
      case Node::Kind::kSetBlock: {
        DI_ASSIGN_OR_RETURN(std::string text, Capture(n.bodies[0]));
        frames_.back()[n.targets[0]] = Value::String(std::move(text));
        return Flow::kNormal;
      }
      case Node::Kind::kMacro:
        frames_.back()[n.macro->name] = Value::Function(Callable{"", n.macro.get()});
        return Flow::kNormal;
      case Node::Kind::kBreak:
        return Flow::kBreak;
      case Node::Kind::kContinue:
        return Flow::kContinue;
      case Node::Kind::kBlock:
        return Exec(n.bodies[0]);
    }
    return Flow::kNormal;
  }

  Status Append(const std::string& text) {
    DI_RETURN_IF_ERROR(budget_.ChargeString(text.size()));
    if (text.size() > budget_.limits().max_output_bytes - out_->size()) {
      return InvalidArgument("rendered text exceeds " + std::to_string(budget_.limits().max_output_bytes) +
                             " bytes");
    }
    *out_ += text;
    return Status::Ok();
  }

  // Renders `body` into a string of its own (block set, macro call).
  StatusOr<std::string> Capture(const Body& body) {
    std::string buffer;
    std::string* saved = out_;
    out_ = &buffer;
    StatusOr<Flow> flow = Exec(body);
    out_ = saved;
    if (!flow.ok()) return flow.status();
    return buffer;
  }

  Status BindTargets(const Node& n, const Value& item, std::map<std::string, Value>* frame) {
    if (n.targets.size() == 1) {
      (*frame)[n.targets[0]] = item;
      return Status::Ok();
    }
    if (!item.is_list() || item.list().size() != n.targets.size()) {
      return At(n, InvalidArgument("cannot unpack a " + std::string(item.TypeName()) + " into " +
                                   std::to_string(n.targets.size()) + " loop variables"));
    }
    for (size_t i = 0; i < n.targets.size(); ++i) (*frame)[n.targets[i]] = item.list()[i];
    return Status::Ok();
  }

  StatusOr<Flow> ExecFor(const Node& n) {
    DI_ASSIGN_OR_RETURN(Value iterable, Eval(*n.expr));
    DI_JINJA_ASSIGN(*n.expr, std::vector<Value> items, Iterate(iterable, &budget_));
    if (n.filter) {  // "for x in xs if cond": filtered before loop.length is known
      std::vector<Value> kept;
      for (const Value& item : items) {
        frames_.emplace_back();
        Status bound = BindTargets(n, item, &frames_.back());
        StatusOr<Value> keep = bound.ok() ? Eval(*n.filter) : StatusOr<Value>(bound);
        frames_.pop_back();
        if (!keep.ok()) return keep.status();
        if (keep->Truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) return Exec(n.else_body);
    const auto length = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < length; ++i) {
      DI_JINJA_TRY(n, budget_.Charge(1));
      frames_.emplace_back();
      auto& frame = frames_.back();
      Status bound = BindTargets(n, items[static_cast<size_t>(i)], &frame);
      if (!bound.ok()) {
        frames_.pop_back();
        return bound;
      }
      ValueDict loop = {
          {"index", Value::Int(i + 1)},         {"index0", Value::Int(i)},
          {"revindex", Value::Int(length - i)}, {"revindex0", Value::Int(length - i - 1)},
          {"first", Value::Bool(i == 0)},       {"last", Value::Bool(i == length - 1)},
          {"length", Value::Int(length)},
      };
      if (i > 0) loop.emplace_back("previtem", items[static_cast<size_t>(i - 1)]);
      if (i + 1 < length) loop.emplace_back("nextitem", items[static_cast<size_t>(i + 1)]);
      frame["loop"] = Value::Dict(std::move(loop));
      StatusOr<Flow> flow = Exec(n.bodies[0]);
      frames_.pop_back();
      if (!flow.ok()) return flow.status();
      if (*flow == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  // ---- names ----
  Value Lookup(const std::string& name) const {
    for (size_t i = frames_.size(); i-- > floor_;) {
      auto it = frames_[i].find(name);
      if (it != frames_[i].end()) return it->second;
    }
    if (floor_ > 0) {  // inside a macro: its frames, then the template's globals
      auto it = frames_[0].find(name);
      if (it != frames_[0].end()) return it->second;
    }
    if (IsGlobalFunction(name)) return Value::Function(Callable{name, nullptr});
    return Value();
  }

  static std::string Describe(const Expr& e) {
    if (e.kind == Expr::Kind::kName) return "'" + e.name + "'";
    if (e.kind == Expr::Kind::kAttr) return Describe(*e.args[0]) + "." + e.name;
    return "value";
  }

  // ---- expressions ----
  StatusOr<Value> Eval(const Expr& e) {
    DI_JINJA_TRY(e, budget_.Charge(1));
    DI_ASSIGN_OR_RETURN(Value v, EvalInner(e));
    if (v.depth() > budget_.limits().max_value_depth) {
      return At(e, InvalidArgument("value nested too deeply (limit " +
                                   std::to_string(budget_.limits().max_value_depth) + ")"));
    }
    if (v.weight() > budget_.limits().max_output_bytes) {
      return At(e, InvalidArgument("value too large (over " +
                                   std::to_string(budget_.limits().max_output_bytes) + " bytes)"));
    }
    return v;
  }

  StatusOr<Value> EvalInner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.literal;
      case Expr::Kind::kName:
        return Lookup(e.name);
      case Expr::Kind::kList: {
        DI_ASSIGN_OR_RETURN(ValueList items, EvalAll(e.args));
        return Value::List(std::move(items));
      }
      case Expr::Kind::kDict: {
        ValueDict entries;
        for (size_t i = 0; i < e.keys.size(); ++i) {
          DI_ASSIGN_OR_RETURN(Value key, Eval(*e.keys[i]));
          if (!key.is_string()) return At(*e.keys[i], InvalidArgument("dict keys must be strings"));
          DI_ASSIGN_OR_RETURN(Value value, Eval(*e.args[i]));
          if (value.kind() == Value::Kind::kNamespace) {
            return At(*e.args[i], InvalidArgument("a namespace cannot be stored in a dict"));
          }
          entries.emplace_back(key.str(), std::move(value));
        }
        return Value::Dict(std::move(entries));
      }
      case Expr::Kind::kAttr:
      case Expr::Kind::kItem: {
        DI_ASSIGN_OR_RETURN(Value object, Eval(*e.args[0]));
        Value key = Value::String(e.name);
        if (e.kind == Expr::Kind::kItem) {
          DI_ASSIGN_OR_RETURN(key, Eval(*e.args[1]));
        }
        if (object.is_undefined()) {
          return At(e, InvalidArgument(Describe(*e.args[0]) + " is undefined"));
        }
        if (object.is_string()) DI_JINJA_TRY(e, ChargeScan(object));  // code point walk
        return GetItem(object, key);
      }
      case Expr::Kind::kSlice: {
        DI_ASSIGN_OR_RETURN(Value object, Eval(*e.args[0]));
        Value parts[3];
        for (int i = 0; i < 3; ++i) {
          if (e.args[static_cast<size_t>(i) + 1]) {
            DI_ASSIGN_OR_RETURN(parts[i], Eval(*e.args[static_cast<size_t>(i) + 1]));
          }
        }
        DI_JINJA_ASSIGN(e, Value v, Slice(object, parts[0], parts[1], parts[2], &budget_));
        return v;
      }
      case Expr::Kind::kCall:
        return EvalCall(e);
      case Expr::Kind::kFilter: {
        DI_ASSIGN_OR_RETURN(Value input, Eval(*e.args[0]));
        DI_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1));
        DI_JINJA_TRY(e, ChargeScan(input, &args));
        if (e.name == "tojson" || e.name == "string" || e.name == "join") {
          DI_JINJA_TRY(e, budget_.ChargeString(input.weight()));
        }
        DI_JINJA_ASSIGN(e, Value v, ApplyFilter(e.name, input, args, &budget_));
        return v;
      }
      case Expr::Kind::kTest: {
        DI_ASSIGN_OR_RETURN(Value input, Eval(*e.args[0]));
        DI_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1));
        DI_JINJA_TRY(e, ChargeScan(input, &args));
        DI_JINJA_ASSIGN(e, bool pass, ApplyTest(e.name, input, args, &budget_));
        return Value::Bool(pass != e.negated);
      }
      case Expr::Kind::kUnary: {
        DI_ASSIGN_OR_RETURN(Value v, Eval(*e.args[0]));
        if (e.name == "not") return Value::Bool(!v.Truthy());
        if (v.kind() == Value::Kind::kBool) v = Value::Int(v.bool_value() ? 1 : 0);
        if (v.kind() == Value::Kind::kInt) {
          if (e.name == "+") return v;
          if (v.int_value() == std::numeric_limits<int64_t>::min()) {
            return At(e, InvalidArgument("integer overflow"));
          }
          return Value::Int(-v.int_value());
        }
        if (v.kind() == Value::Kind::kFloat) return Value::Float(e.name == "+" ? v.number() : -v.number());
        return At(e, InvalidArgument("bad operand type for unary " + e.name + ": " + v.TypeName()));
      }
      case Expr::Kind::kAnd:
      case Expr::Kind::kOr: {
        DI_ASSIGN_OR_RETURN(Value left, Eval(*e.args[0]));
        // Python returns the deciding operand, not a bool.
        if (left.Truthy() == (e.kind == Expr::Kind::kOr)) return left;
        return Eval(*e.args[1]);
      }
      case Expr::Kind::kCond: {
        DI_ASSIGN_OR_RETURN(Value cond, Eval(*e.args[0]));
        if (cond.Truthy()) return Eval(*e.args[1]);
        if (e.args[2]) return Eval(*e.args[2]);
        return Value();
      }
      case Expr::Kind::kCompare: {
        DI_ASSIGN_OR_RETURN(Value left, Eval(*e.args[0]));
        for (size_t i = 0; i < e.ops.size(); ++i) {
          DI_ASSIGN_OR_RETURN(Value right, Eval(*e.args[i + 1]));
          DI_JINJA_ASSIGN(e, Value holds, Binary(e.ops[i], left, right));
          if (!holds.Truthy()) return holds;
          left = std::move(right);
        }
        return Value::Bool(true);
      }
      case Expr::Kind::kBinary: {
        DI_ASSIGN_OR_RETURN(Value a, Eval(*e.args[0]));
        DI_ASSIGN_OR_RETURN(Value b, Eval(*e.args[1]));
        DI_JINJA_ASSIGN(e, Value v, Binary(e.name, a, b));
        return v;
      }
    }
    return Value();
  }

  StatusOr<ValueList> EvalAll(const std::vector<ExprPtr>& exprs) {
    ValueList out;
    out.reserve(exprs.size());
    for (const ExprPtr& x : exprs) {
      DI_ASSIGN_OR_RETURN(Value v, Eval(*x));
      if (v.kind() == Value::Kind::kNamespace) {
        return At(*x, InvalidArgument("a namespace cannot be stored in a list"));
      }
      out.push_back(std::move(v));
    }
    return out;
  }

  StatusOr<CallArgs> EvalArgs(const Expr& e, size_t first) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i) {
      DI_ASSIGN_OR_RETURN(Value v, Eval(*e.args[i]));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [k, x] : e.kwargs) {
      DI_ASSIGN_OR_RETURN(Value v, Eval(*x));
      args.keyword.emplace_back(k, std::move(v));
    }
    return args;
  }

  StatusOr<Value> EvalCall(const Expr& e) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::kAttr) {
      DI_ASSIGN_OR_RETURN(Value object, Eval(*callee.args[0]));
      if (object.is_undefined()) {
        return At(callee, InvalidArgument(Describe(*callee.args[0]) + " is undefined"));
      }
      if (object.is_string() || object.is_dict() || object.is_list()) {
        DI_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1));
        DI_JINJA_TRY(e, ChargeScan(object, &args));
        StatusOr<Value> result = CallMethod(object, callee.name, args, &budget_);
        if (result.ok() || result.status().code() != StatusCode::kNotFound) {
          if (!result.ok()) return At(e, result.status());
          return result;
        }
        // Not a method: maybe a dict entry holding a macro.
        Value member = GetItem(object, Value::String(callee.name));
        if (member.kind() != Value::Kind::kCallable) return At(e, InvalidArgument(result.status().message()));
        return CallValue(e, member, args);
      }
    }
    DI_ASSIGN_OR_RETURN(Value fn, Eval(callee));
    DI_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, 1));
    return CallValue(e, fn, args);
  }

  StatusOr<Value> CallValue(const Expr& e, const Value& fn, const CallArgs& args) {
    if (fn.kind() != Value::Kind::kCallable) {
      return At(e, InvalidArgument(Describe(*e.args[0]) + " is not callable (a " + fn.TypeName() + ")"));
    }
    if (fn.callable().macro == nullptr) {
      DI_JINJA_ASSIGN(e, Value v, CallGlobalFunction(fn.callable().builtin, args, &budget_));
      return v;
    }
    return CallMacro(e, *fn.callable().macro, args);
  }

  StatusOr<Value> CallMacro(const Expr& e, const MacroNode& macro, const CallArgs& args) {
    if (call_depth_ >= budget_.limits().max_call_depth) {
      return At(e, InvalidArgument("macro calls nested too deeply (limit " +
                                   std::to_string(budget_.limits().max_call_depth) + ")"));
    }
    if (args.positional.size() > macro.params.size()) {
      return At(e, InvalidArgument("macro '" + macro.name + "' takes " + std::to_string(macro.params.size()) +
                                   " arguments"));
    }
    std::map<std::string, Value> frame;
    for (size_t i = 0; i < macro.params.size(); ++i) {
      if (const Value* v = args.Get(i, macro.params[i].c_str()); v != nullptr) {
        frame[macro.params[i]] = *v;
      } else if (macro.defaults[i]) {
        DI_ASSIGN_OR_RETURN(frame[macro.params[i]], Eval(*macro.defaults[i]));
      }
    }
    for (const auto& [k, v] : args.keyword) {
      if (std::find(macro.params.begin(), macro.params.end(), k) == macro.params.end()) {
        return At(e, InvalidArgument("macro '" + macro.name + "' has no parameter '" + k + "'"));
      }
    }
    frames_.push_back(std::move(frame));
    const size_t saved_floor = floor_;
    floor_ = frames_.size() - 1;
    ++call_depth_;
    StatusOr<std::string> text = Capture(macro.body);
    --call_depth_;
    floor_ = saved_floor;
    frames_.pop_back();
    if (!text.ok()) return text.status();
    return Value::String(std::move(text).value());
  }

  StatusOr<Value> Binary(const std::string& op, const Value& a, const Value& b) {
    using K = Value::Kind;
    if (op == "==" || op == "!=") {
      DI_RETURN_IF_ERROR(ChargeCompare(&budget_, a, b));
      return Value::Bool(Equal(a, b) == (op == "=="));
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      DI_RETURN_IF_ERROR(ChargeCompare(&budget_, a, b));
      DI_ASSIGN_OR_RETURN(int c, Compare(a, b));
      return Value::Bool(op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0);
    }
    if (op == "in" || op == "not in") {
      CallArgs args;
      args.positional.push_back(b);
      DI_RETURN_IF_ERROR(budget_.Charge(static_cast<int64_t>(b.weight() / 64 + 1)));
      DI_ASSIGN_OR_RETURN(bool found, ApplyTest("in", a, args, &budget_));
      return Value::Bool(found == (op == "in"));
    }
    if (op == "~") {
      DI_RETURN_IF_ERROR(budget_.ChargeString(a.weight() + b.weight()));
      std::string s = a.ToString() + b.ToString();
      DI_RETURN_IF_ERROR(budget_.ChargeString(s.size()));
      return Value::String(std::move(s));
    }
    if (op == "+" && a.is_string() && b.is_string()) {
      DI_RETURN_IF_ERROR(budget_.ChargeString(a.str().size() + b.str().size()));
      return Value::String(a.str() + b.str());
    }
    if (op == "+" && a.is_list() && b.is_list()) {
      DI_RETURN_IF_ERROR(budget_.Charge(static_cast<int64_t>(a.list().size() + b.list().size())));
      ValueList out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return Value::List(std::move(out));
    }
    if (op == "*" && (a.is_string() || a.is_list() || b.is_string() || b.is_list())) return Repeat(a, b);
    auto numeric = [](const Value& v) { return v.is_number() || v.kind() == K::kBool; };
    if (!numeric(a) || !numeric(b)) {
      return InvalidArgument("unsupported operand types for " + op + ": " + a.TypeName() + " and " +
                             b.TypeName());
    }
    auto as_int = [](const Value& v) {
      return v.kind() == K::kBool ? int64_t{v.bool_value()} : v.int_value();
    };
    auto as_double = [](const Value& v) {
      return v.kind() == K::kBool ? (v.bool_value() ? 1.0 : 0.0) : v.number();
    };
    const bool ints = a.kind() != K::kFloat && b.kind() != K::kFloat;
    if (ints) {
      const int64_t x = as_int(a), y = as_int(b);
      int64_t r = 0;
      if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value::Int(r);
      if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value::Int(r);
      if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value::Int(r);
      if (op == "//" || op == "%") {
        if (y == 0) return InvalidArgument("integer division or modulo by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) return InvalidArgument("integer overflow");
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors toward -infinity
          --q;
          m += y;
        }
        return Value::Int(op == "//" ? q : m);
      }
      if (op == "**" && y >= 0) {
        int64_t result = 1, base = x, e = y;
        bool overflow = false;
        while (e > 0 && !overflow) {
          if (e & 1) overflow = __builtin_mul_overflow(result, base, &result);
          e >>= 1;
          if (e > 0 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
        }
        if (!overflow) return Value::Int(result);
      }
      if (op == "+" || op == "-" || op == "*" || op == "**") {
        if (op != "**" || y >= 0) return InvalidArgument("integer overflow in " + op);
      }
    }
    const double x = as_double(a), y = as_double(b);
    if (op == "+") return Value::Float(x + y);
    if (op == "-") return Value::Float(x - y);
    if (op == "*") return Value::Float(x * y);
    if (op == "/") {
      if (y == 0) return InvalidArgument("division by zero");
      return Value::Float(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0) return InvalidArgument("float division or modulo by zero");
      const double m = std::fmod(x, y);
      const double fixed = (m != 0 && ((m < 0) != (y < 0))) ? m + y : m;
      return Value::Float(op == "//" ? std::floor(x / y) : fixed);
    }
    if (op == "**") return Value::Float(std::pow(x, y));
    return InvalidArgument("unsupported operator " + op);
  }

  StatusOr<Value> Repeat(const Value& a, const Value& b) {
    const Value& seq = a.is_string() || a.is_list() ? a : b;
    const Value& count_v = a.is_string() || a.is_list() ? b : a;
    if (count_v.kind() != Value::Kind::kInt) {
      return InvalidArgument(std::string("can't multiply a ") + seq.TypeName() + " by a " +
                             count_v.TypeName());
    }
    const int64_t count = std::max<int64_t>(0, count_v.int_value());
    const uint64_t unit = seq.is_string() ? seq.str().size() : seq.list().size();
    if (unit == 0 || count == 0) return seq.is_string() ? Value::String("") : Value::List({});
    if (unit != 0 && static_cast<uint64_t>(count) > budget_.limits().max_output_bytes / unit) {
      return InvalidArgument("repetition result too large");
    }
    if (seq.is_string()) {
      DI_RETURN_IF_ERROR(budget_.ChargeString(unit * static_cast<uint64_t>(count)));
      std::string out;
      for (int64_t i = 0; i < count; ++i) out += seq.str();
      return Value::String(std::move(out));
    }
    DI_RETURN_IF_ERROR(budget_.Charge(static_cast<int64_t>(unit) * count));
    ValueList out;
    for (int64_t i = 0; i < count; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
    return Value::List(std::move(out));
  }

  // Built-ins walk their inputs (find, split, strip, in, ...): charge one
  // step per 64 bytes so a loop over a huge string cannot run unbounded.
  Status ChargeScan(const Value& input, const CallArgs* args = nullptr) {
    uint64_t bytes = input.weight();
    if (args != nullptr) {
      for (const Value& a : args->positional) bytes += a.weight();
      for (const auto& kw : args->keyword) bytes += kw.second.weight();
    }
    return budget_.Charge(static_cast<int64_t>(bytes / 64 + 1));
  }

  Budget budget_;
  std::vector<std::map<std::string, Value>> frames_;  // [0]: context + top-level sets
  size_t floor_ = 0;  // lowest frame visible besides [0] (a macro's own frame)
  int call_depth_ = 0;
  std::string* out_ = nullptr;
};

}  // namespace

StatusOr<Template> Template::Parse(const std::string& source, const ParseLimits& limits) {
  DI_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lex(source));
  DI_ASSIGN_OR_RETURN(Body body, jinja::Parse(tokens, limits));
  return Template(std::make_shared<const Body>(std::move(body)));
}

StatusOr<std::string> Template::Render(const Context& context, const RenderLimits& limits) const {
  Evaluator evaluator(limits, context);
  return evaluator.Run(*body_);
}

}  // namespace deepinfer::jinja
