#include "jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace deepinfer::jinja {
namespace {
uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  constexpr uint64_t kMax = uint64_t{1} << 62;
  return a >= kMax || b >= kMax - a ? kMax : a + b;
}
}  // namespace

Value Value::None() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}
Value Value::Float(double d) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.d_ = d;
  return v;
}
Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.weight_ = std::max<uint64_t>(8, s.size());
  v.ptr_ = std::make_shared<std::string>(std::move(s));
  return v;
}
Value Value::List(ValueList items) {
  Value v;
  v.kind_ = Kind::kList;
  int depth = 0;
  uint64_t weight = 8;
  for (const Value& x : items) {
    depth = std::max(depth, x.depth_);
    weight = SaturatingAdd(weight, x.weight_);
  }
  v.depth_ = depth + 1;
  v.weight_ = weight;
  v.ptr_ = std::make_shared<ValueList>(std::move(items));
  return v;
}
Value Value::Dict(ValueDict items) {
  Value v;
  v.kind_ = Kind::kDict;
  ValueDict unique;
  unique.reserve(items.size());
  int depth = 0;
  uint64_t weight = 8;
  for (auto& entry : items) {
    depth = std::max(depth, entry.second.depth_);
    weight = SaturatingAdd(weight, SaturatingAdd(entry.first.size() + 8, entry.second.weight_));
    auto it =
        std::find_if(unique.begin(), unique.end(), [&](const auto& e) { return e.first == entry.first; });
    if (it != unique.end()) {
      it->second = std::move(entry.second);
    } else {
      unique.push_back(std::move(entry));
    }
  }
  v.depth_ = depth + 1;
  v.weight_ = weight;
  v.ptr_ = std::make_shared<ValueDict>(std::move(unique));
  return v;
}
Value Value::NewNamespace() {
  Value v;
  v.kind_ = Kind::kNamespace;
  v.ptr_ = std::make_shared<Namespace>();
  return v;
}
Value Value::Function(Callable c) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.ptr_ = std::make_shared<Callable>(std::move(c));
  return v;
}

const Value* Value::Find(const std::string& key) const {
  if (kind_ != Kind::kDict) return nullptr;
  for (const auto& [k, v] : dict()) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool Value::Truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return d_ != 0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return !list().empty();
    case Kind::kDict:
      return !dict().empty();
    case Kind::kNamespace:
    case Kind::kCallable:
      return true;
  }
  return false;
}

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form, re-laid-out the way
  // Python's repr does: plain notation for exponents in [-4, 16).
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp = std::stoi(sci.substr(e + 1));
  if (exp >= -4 && exp < 16) {
    std::string out;
    if (exp < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out =
          digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
    }
    return sign + out;
  }
  std::string mant = digits.substr(0, 1);
  if (digits.size() > 1) mant += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return sign + mant + ebuf;
}

namespace {

std::string PyQuote(const std::string& s) {
  // Python prefers single quotes unless the text has ' and no ".
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

void JsonQuote(const std::string& s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          *out += static_cast<char>(c);
        }
    }
  }
  *out += '"';
}

Status JsonAppend(const Value& v, int indent, bool sort_keys, int level, std::string* out) {
  auto newline = [&](int lvl) {
    if (indent >= 0) {
      *out += '\n';
      out->append(static_cast<size_t>(indent) * static_cast<size_t>(lvl), ' ');
    }
  };
  // Python's separators: (', ', ': ') on one line, (',', ': ') with indent.
  const char* item_sep = indent >= 0 ? "," : ", ";
  switch (v.kind()) {
    case Value::Kind::kNone:
      *out += "null";
      return Status::Ok();
    case Value::Kind::kBool:
      *out += v.bool_value() ? "true" : "false";
      return Status::Ok();
    case Value::Kind::kInt:
      *out += std::to_string(v.int_value());
      return Status::Ok();
    case Value::Kind::kFloat: {
      const double d = v.number();
      if (std::isnan(d)) {
        *out += "NaN";
      } else if (std::isinf(d)) {
        *out += d < 0 ? "-Infinity" : "Infinity";
      } else {
        *out += FloatRepr(d);
      }
      return Status::Ok();
    }
    case Value::Kind::kString:
      JsonQuote(v.str(), out);
      return Status::Ok();
    case Value::Kind::kList: {
      if (v.list().empty()) {
        *out += "[]";
        return Status::Ok();
      }
      *out += '[';
      bool first = true;
      for (const Value& x : v.list()) {
        if (!first) *out += item_sep;
        first = false;
        newline(level + 1);
        DI_RETURN_IF_ERROR(JsonAppend(x, indent, sort_keys, level + 1, out));
      }
      newline(level);
      *out += ']';
      return Status::Ok();
    }
    case Value::Kind::kDict: {
      if (v.dict().empty()) {
        *out += "{}";
        return Status::Ok();
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.dict()) entries.push_back(&e);
      if (sort_keys) {
        std::sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      }
      *out += '{';
      bool first = true;
      for (const auto* e : entries) {
        if (!first) *out += item_sep;
        first = false;
        newline(level + 1);
        JsonQuote(e->first, out);
        *out += ": ";
        DI_RETURN_IF_ERROR(JsonAppend(e->second, indent, sort_keys, level + 1, out));
      }
      newline(level);
      *out += '}';
      return Status::Ok();
    }
    default:
      return InvalidArgument(std::string("tojson: cannot serialize a value of type ") + v.TypeName());
  }
}

}  // namespace

std::string Value::ToString() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return str();
    default:
      return Repr();
  }
}

std::string Value::Repr() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return b_ ? "True" : "False";
    case Kind::kInt:
      return std::to_string(i_);
    case Kind::kFloat:
      return FloatRepr(d_);
    case Kind::kString:
      return PyQuote(str());
    case Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < list().size(); ++i) {
        if (i > 0) out += ", ";
        out += list()[i].Repr();
      }
      return out + "]";
    }
    case Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : dict()) {
        if (!first) out += ", ";
        first = false;
        out += PyQuote(k) + ": " + x.Repr();
      }
      return out + "}";
    }
    case Kind::kNamespace:
      return "<Namespace>";
    case Kind::kCallable:
      return "<function>";
  }
  return "";
}

StatusOr<std::string> Value::ToJson(int indent, bool sort_keys) const {
  std::string out;
  DI_RETURN_IF_ERROR(JsonAppend(*this, indent, sort_keys, 0, &out));
  return out;
}

const char* Value::TypeName() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "undefined";
    case Kind::kNone:
      return "none";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "string";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "namespace";
    case Kind::kCallable:
      return "function";
  }
  return "?";
}

bool Equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  auto numeric = [](const Value& v) { return v.is_number() || v.kind() == K::kBool; };
  if (numeric(a) && numeric(b)) {
    auto as_double = [](const Value& v) {
      return v.kind() == K::kBool ? (v.bool_value() ? 1.0 : 0.0) : v.number();
    };
    if (a.kind() == K::kInt && b.kind() == K::kInt) return a.int_value() == b.int_value();
    return as_double(a) == as_double(b);
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone:
      return true;
    case K::kString:
      return a.str() == b.str();
    case K::kList: {
      if (a.list().size() != b.list().size()) return false;
      for (size_t i = 0; i < a.list().size(); ++i) {
        if (!Equal(a.list()[i], b.list()[i])) return false;
      }
      return true;
    }
    case K::kDict: {
      if (a.dict().size() != b.dict().size()) return false;
      for (const auto& [k, x] : a.dict()) {
        const Value* y = b.Find(k);
        if (y == nullptr || !Equal(x, *y)) return false;
      }
      return true;
    }
    case K::kNamespace:
      return &a.ns() == &b.ns();
    case K::kCallable:
      return &a.callable() == &b.callable();
    default:
      return false;
  }
}

size_t CodePointLength(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  // A malformed lead byte or a truncated sequence counts as one character.
  if (i + len > s.size()) return 1;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  }
  return len;
}

std::vector<std::string> SplitCodePoints(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const size_t len = CodePointLength(s, i);
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

size_t CountCodePoints(const std::string& s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += CodePointLength(s, i)) ++n;
  return n;
}

}  // namespace deepinfer::jinja
