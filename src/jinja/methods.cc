// Python object behaviour for Jinja values: str/dict methods, indexing,
// slicing and iteration (declared in builtins.h).
#include <algorithm>
#include <limits>

#include "jinja/builtins.h"

namespace deepinfer::jinja {
namespace {

bool IsAscii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// Python's str.strip([chars]) on code points; no chars means whitespace.
std::string Strip(const std::string& s, const Value* chars, bool left, bool right) {
  const std::string set_text = chars != nullptr && chars->is_string() ? chars->str() : " \t\n\r\f\v";
  if (IsAscii(set_text)) {
    // ASCII never matches inside a multi-byte UTF-8 sequence: strip bytes.
    size_t begin = 0, end = s.size();
    if (left) {
      while (begin < end && set_text.find(s[begin]) != std::string::npos) ++begin;
    }
    if (right) {
      while (end > begin && set_text.find(s[end - 1]) != std::string::npos) --end;
    }
    return s.substr(begin, end - begin);
  }
  const std::vector<std::string> set = SplitCodePoints(set_text);
  std::vector<std::string> cps = SplitCodePoints(s);
  auto in_set = [&](const std::string& cp) { return std::find(set.begin(), set.end(), cp) != set.end(); };
  size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && in_set(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && in_set(cps[end - 1])) --end;
  }
  std::string out;
  for (size_t i = begin; i < end; ++i) out += cps[i];
  return out;
}

bool IsPySpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

StatusOr<Value> Split(const std::string& s, const Value* sep, const Value* maxsplit_v, Budget* budget) {
  // Each part costs a step, and the list may not outgrow the value limit
  // (a part weighs at least 8 bytes; see Value::weight).
  uint64_t weight = 0;
  auto charge_part = [&]() -> Status {
    weight += 8;
    if (weight > budget->limits().max_output_bytes) return InvalidArgument("split: too many parts");
    return budget->Charge(1);
  };
  int64_t maxsplit = -1;
  if (maxsplit_v != nullptr && maxsplit_v->kind() == Value::Kind::kInt) maxsplit = maxsplit_v->int_value();
  ValueList parts;
  if (sep == nullptr || sep->is_none()) {
    // Runs of whitespace separate; no empty strings at the ends.
    size_t i = 0;
    while (true) {
      while (i < s.size() && IsPySpace(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        parts.push_back(Value::String(s.substr(i)));  // Python keeps the remainder's trailing space
        break;
      }
      size_t j = i;
      while (j < s.size() && !IsPySpace(s[j])) ++j;
      DI_RETURN_IF_ERROR(charge_part());
      parts.push_back(Value::String(s.substr(i, j - i)));
      i = j;
    }
  } else {
    if (!sep->is_string()) return InvalidArgument("split: separator must be a string");
    const std::string& d = sep->str();
    if (d.empty()) return InvalidArgument("split: empty separator");
    size_t start = 0;
    while (true) {
      const size_t hit = s.find(d, start);
      if (hit == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit)) {
        parts.push_back(Value::String(s.substr(start)));
        break;
      }
      DI_RETURN_IF_ERROR(charge_part());
      parts.push_back(Value::String(s.substr(start, hit - start)));
      start = hit + d.size();
    }
  }
  DI_RETURN_IF_ERROR(budget->ChargeString(s.size()));
  return Value::List(std::move(parts));
}

StatusOr<std::string> Replace(const std::string& s, const std::string& from, const std::string& to,
                              int64_t count, Budget* budget) {
  std::string out;
  size_t pos = 0;
  int64_t done = 0;
  if (from.empty()) {
    // Python inserts `to` around every character.
    std::vector<std::string> cps = SplitCodePoints(s);
    for (const std::string& cp : cps) {
      if (count >= 0 && done >= count) {
        out += cp;
        continue;
      }
      DI_RETURN_IF_ERROR(budget->ChargeString(to.size() + cp.size()));
      out += to + cp;
      if (out.size() > budget->limits().max_output_bytes) return InvalidArgument("replace: result too long");
      ++done;
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  while (true) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos || (count >= 0 && done >= count)) break;
    DI_RETURN_IF_ERROR(budget->ChargeString(hit - pos + to.size()));
    out.append(s, pos, hit - pos);
    out += to;
    if (out.size() > budget->limits().max_output_bytes) return InvalidArgument("replace: result too long");
    pos = hit + from.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  DI_RETURN_IF_ERROR(budget->ChargeString(out.size()));
  return out;
}

bool AffixMatch(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const std::string& a) {
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (affix.is_string()) return one(affix.str());
  if (affix.is_list()) {  // Python accepts a tuple of candidates
    for (const Value& v : affix.list()) {
      if (v.is_string() && one(v.str())) return true;
    }
  }
  return false;
}

std::string AsciiCase(std::string s, bool upper) {
  for (char& c : s) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return s;
}

StatusOr<Value> StringMethod(const std::string& s, const std::string& name, const CallArgs& args,
                             Budget* budget) {
  const Value* a0 = args.Get(0, "");
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const Value* chars = args.Get(0, "chars");
    return Value::String(Strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "startswith" || name == "endswith") {
    if (a0 == nullptr) return InvalidArgument(name + ": missing argument");
    return Value::Bool(AffixMatch(s, *a0, name == "startswith"));
  }
  if (name == "split") return Split(s, args.Get(0, "sep"), args.Get(1, "maxsplit"), budget);
  if (name == "replace") {
    const Value* from = args.Get(0, "old");
    const Value* to = args.Get(1, "new");
    const Value* count = args.Get(2, "count");
    if (from == nullptr || to == nullptr || !from->is_string() || !to->is_string()) {
      return InvalidArgument("replace: expected two string arguments");
    }
    const int64_t n = count != nullptr && count->kind() == Value::Kind::kInt ? count->int_value() : -1;
    DI_ASSIGN_OR_RETURN(std::string out, Replace(s, from->str(), to->str(), n, budget));
    return Value::String(std::move(out));
  }
  if (name == "upper" || name == "lower") return Value::String(AsciiCase(s, name == "upper"));
  if (name == "capitalize") {
    std::string out = AsciiCase(s, false);
    if (!out.empty()) out[0] = AsciiCase(out.substr(0, 1), true)[0];
    return Value::String(std::move(out));
  }
  if (name == "title") {
    std::string out = s;
    bool start = true;
    for (char& c : out) {
      const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      if (alpha) c = start ? AsciiCase(std::string(1, c), true)[0] : AsciiCase(std::string(1, c), false)[0];
      start = !alpha;
    }
    return Value::String(std::move(out));
  }
  if (name == "find" || name == "count") {
    if (a0 == nullptr || !a0->is_string()) return InvalidArgument(name + ": expected a string argument");
    if (name == "find") {
      const size_t hit = s.find(a0->str());
      if (hit == std::string::npos) return Value::Int(-1);
      return Value::Int(static_cast<int64_t>(CountCodePoints(s.substr(0, hit))));
    }
    if (a0->str().empty()) return Value::Int(static_cast<int64_t>(CountCodePoints(s)) + 1);
    int64_t n = 0;
    for (size_t p = s.find(a0->str()); p != std::string::npos; p = s.find(a0->str(), p + a0->str().size())) {
      ++n;
    }
    return Value::Int(n);
  }
  if (name == "join") {
    if (a0 == nullptr) return InvalidArgument("join: missing argument");
    DI_ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(*a0, budget));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) return InvalidArgument("join: sequence item is not a string");
      if (i > 0) out += s;
      out += items[i].str();
      DI_RETURN_IF_ERROR(budget->ChargeString(s.size() + items[i].str().size()));
    }
    return Value::String(std::move(out));
  }
  if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum") {
    if (s.empty()) return Value::Bool(false);
    bool all = true;
    for (char c : s) {
      const bool digit = c >= '0' && c <= '9';
      const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      all = all && (name == "isdigit"   ? digit
                    : name == "isspace" ? IsPySpace(c)
                    : name == "isalpha" ? alpha
                                        : digit || alpha);
    }
    return Value::Bool(all);
  }
  return NotFound("string has no method '" + name + "'");
}

StatusOr<Value> DictMethod(const Value& d, const std::string& name, const CallArgs& args, Budget* budget) {
  if (name == "get") {
    const Value* key = args.Get(0, "key");
    if (key == nullptr) return InvalidArgument("get: missing key");
    const Value* def = args.Get(1, "default");
    const Value* hit = key->is_string() ? d.Find(key->str()) : nullptr;
    if (hit != nullptr) return *hit;
    return def != nullptr ? *def : Value::None();
  }
  if (name == "items" || name == "keys" || name == "values") {
    DI_RETURN_IF_ERROR(budget->Charge(static_cast<int64_t>(d.dict().size())));
    ValueList out;
    for (const auto& [k, v] : d.dict()) {
      if (name == "items") {
        out.push_back(Value::List({Value::String(k), v}));
      } else {
        out.push_back(name == "keys" ? Value::String(k) : v);
      }
    }
    return Value::List(std::move(out));
  }
  return NotFound("dict has no method '" + name + "'");
}

// Python index normalization; false when out of range.
bool NormalizeIndex(int64_t i, size_t size, size_t* out) {
  const int64_t n = static_cast<int64_t>(size);
  if (i < 0) i += n;
  if (i < 0 || i >= n) return false;
  *out = static_cast<size_t>(i);
  return true;
}

}  // namespace

StatusOr<Value> CallMethod(const Value& object, const std::string& name, const CallArgs& args,
                           Budget* budget) {
  if (object.is_string()) return StringMethod(object.str(), name, args, budget);
  if (object.is_dict()) return DictMethod(object, name, args, budget);
  if (object.is_list() && (name == "index" || name == "count")) {
    const Value* x = args.Get(0, "");
    if (x == nullptr) return InvalidArgument(name + ": missing argument");
    int64_t count = 0;
    for (size_t i = 0; i < object.list().size(); ++i) {
      if (!Equal(object.list()[i], *x)) continue;
      if (name == "index") return Value::Int(static_cast<int64_t>(i));
      ++count;
    }
    if (name == "index") return InvalidArgument("index: value is not in the list");
    return Value::Int(count);
  }
  return NotFound(std::string(object.TypeName()) + " has no method '" + name + "'");
}

Value GetItem(const Value& object, const Value& key) {
  switch (object.kind()) {
    case Value::Kind::kDict:
      if (key.is_string()) {
        const Value* hit = object.Find(key.str());
        if (hit != nullptr) return *hit;
      }
      return Value();
    case Value::Kind::kNamespace:
      if (key.is_string()) {
        auto it = object.ns().find(key.str());
        if (it != object.ns().end()) return it->second;
      }
      return Value();
    case Value::Kind::kList: {
      size_t i = 0;
      if (key.kind() == Value::Kind::kInt && NormalizeIndex(key.int_value(), object.list().size(), &i)) {
        return object.list()[i];
      }
      return Value();
    }
    case Value::Kind::kString: {
      if (key.kind() != Value::Kind::kInt) return Value();
      size_t i = 0;
      if (IsAscii(object.str())) {
        if (NormalizeIndex(key.int_value(), object.str().size(), &i)) {
          return Value::String(object.str().substr(i, 1));
        }
        return Value();
      }
      const std::string& s = object.str();
      if (!NormalizeIndex(key.int_value(), CountCodePoints(s), &i)) return Value();
      size_t pos = 0;
      for (; i > 0; --i) pos += CodePointLength(s, pos);
      return Value::String(s.substr(pos, CodePointLength(s, pos)));
    }
    default:
      return Value();
  }
}

StatusOr<Value> Slice(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v,
                      Budget* budget) {
  auto as_int = [](const Value& v, const char* what) -> StatusOr<std::optional<int64_t>> {
    if (v.is_undefined() || v.is_none()) return std::optional<int64_t>();
    if (v.kind() != Value::Kind::kInt) {
      return InvalidArgument(std::string("slice ") + what + " must be an integer");
    }
    return std::optional<int64_t>(v.int_value());
  };
  DI_ASSIGN_OR_RETURN(auto start_o, as_int(start_v, "start"));
  DI_ASSIGN_OR_RETURN(auto stop_o, as_int(stop_v, "stop"));
  DI_ASSIGN_OR_RETURN(auto step_o, as_int(step_v, "step"));
  const int64_t step = step_o.value_or(1);
  if (step == 0) return InvalidArgument("slice step cannot be zero");
  if (step == std::numeric_limits<int64_t>::min()) return InvalidArgument("slice step out of range");

  std::vector<std::string> cps;
  size_t size = 0;
  const bool ascii = object.is_string() && IsAscii(object.str());
  if (object.is_list()) {
    size = object.list().size();
  } else if (ascii) {
    size = object.str().size();
  } else if (object.is_string()) {
    DI_RETURN_IF_ERROR(budget->Charge(static_cast<int64_t>(object.str().size() / 8)));
    cps = SplitCodePoints(object.str());
    size = cps.size();
  } else if (object.is_undefined()) {
    return Value();
  } else {
    return InvalidArgument(std::string("cannot slice a ") + object.TypeName());
  }
  // Python's PySlice_AdjustIndices.
  const int64_t n = static_cast<int64_t>(size);
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x = x < -n ? (step < 0 ? -1 : 0) : x + n;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t start = adjust(start_o, step < 0 ? n - 1 : 0);
  const int64_t stop = adjust(stop_o, step < 0 ? -1 : n);
  std::vector<size_t> picks;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    picks.push_back(static_cast<size_t>(i));
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  DI_RETURN_IF_ERROR(budget->Charge(static_cast<int64_t>(picks.size())));
  if (object.is_list()) {
    ValueList out;
    out.reserve(picks.size());
    for (size_t i : picks) out.push_back(object.list()[i]);
    return Value::List(std::move(out));
  }
  std::string out;
  for (size_t i : picks) {
    if (ascii) {
      out += object.str()[i];
    } else {
      out += cps[i];
    }
  }
  DI_RETURN_IF_ERROR(budget->ChargeString(out.size()));
  return Value::String(std::move(out));
}

StatusOr<std::vector<Value>> Iterate(const Value& v, Budget* budget) {
  const size_t n = v.is_list()     ? v.list().size()
                   : v.is_dict()   ? v.dict().size()
                   : v.is_string() ? v.str().size()
                                   : 0;
  DI_RETURN_IF_ERROR(budget->Charge(static_cast<int64_t>(n)));
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return std::vector<Value>();
    case Value::Kind::kList:
      return v.list();
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, x] : v.dict()) keys.push_back(Value::String(k));
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (std::string& cp : SplitCodePoints(v.str())) chars.push_back(Value::String(std::move(cp)));
      return chars;
    }
    default:
      return InvalidArgument(std::string("a ") + v.TypeName() + " is not iterable");
  }
}

}  // namespace deepinfer::jinja
