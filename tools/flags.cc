#include "tools/flags.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace deepinfer::tools {

Flags::Flags(std::set<std::string> value_flags, std::set<std::string> bool_flags)
    : value_flags_(std::move(value_flags)), bool_flags_(std::move(bool_flags)) {}

Status Flags::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      return InvalidArgument("unexpected argument '" + a + "'");
    }
    std::string name = a.substr(2), value;
    bool has_inline = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    if (bool_flags_.count(name)) {
      if (has_inline) return InvalidArgument("flag --" + name + " takes no value");
      values_[name] = "1";
    } else if (value_flags_.count(name)) {
      if (!has_inline) {
        if (i + 1 >= args.size()) return InvalidArgument("flag --" + name + " needs a value");
        value = args[++i];
      }
      values_[name] = value;
    } else {
      return InvalidArgument("unknown flag --" + name);
    }
  }
  return Status::Ok();
}

bool Flags::Has(const std::string& name) const { return values_.count(name) > 0; }

std::string Flags::GetString(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

StatusOr<std::string> Flags::Required(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return InvalidArgument("missing required flag --" + name);
  return it->second;
}

StatusOr<int64_t> Flags::GetInt(const std::string& name, int64_t def) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') {
    return InvalidArgument("flag --" + name + ": '" + it->second + "' is not an integer");
  }
  return static_cast<int64_t>(v);
}

StatusOr<double> Flags::GetDouble(const std::string& name, double def) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0') {
    return InvalidArgument("flag --" + name + ": '" + it->second + "' is not a number");
  }
  return v;
}

int Fail(const std::string& command, const std::string& message, int code) {
  std::fprintf(stderr, "deepinfer %s: %s\n", command.c_str(), message.c_str());
  return code;
}

}  // namespace deepinfer::tools
