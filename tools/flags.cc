#include "tools/flags.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "core/version.h"

namespace deepinfer::tools {

Flags::Flags(std::vector<FlagSpec> specs, std::string positional)
    : specs_(std::move(specs)), positional_(std::move(positional)) {}

const FlagSpec* Flags::Find(const std::string& name) const {
  for (const FlagSpec& s : specs_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

Status Flags::Parse(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "-h" || a == "--help") {
      help_requested_ = true;
      return Status::Ok();
    }
    if (a == "--version") {
      version_requested_ = true;
      return Status::Ok();
    }
  }
  bool positional_seen = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      if (positional_.empty() || positional_seen || (a.size() > 1 && a[0] == '-')) {
        return InvalidArgument("unexpected argument '" + a + "'");
      }
      if (values_.count(positional_)) {
        return InvalidArgument("'" + a + "' and --" + positional_ + " both name the " + positional_);
      }
      values_[positional_] = a;
      positional_seen = true;
      continue;
    }
    std::string name = a.substr(2), value;
    bool has_inline = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    const FlagSpec* spec = Find(name);
    if (spec == nullptr) return InvalidArgument("unknown flag --" + name + " (see --help)");
    if (spec->metavar.empty()) {
      if (has_inline) return InvalidArgument("flag --" + name + " takes no value");
      values_[name] = "1";
      continue;
    }
    if (!has_inline) {
      if (i + 1 >= args.size()) return InvalidArgument("flag --" + name + " needs a value");
      value = args[++i];
    }
    if (name == positional_ && positional_seen) {
      return InvalidArgument("--" + name + " given twice (once as a bare argument)");
    }
    values_[name] = value;
  }
  return Status::Ok();
}

std::string Flags::Help(const std::string& usage, const std::string& summary) const {
  constexpr size_t kColumn = 34;
  auto line = [](std::string left, const std::string& text) {
    left = "  " + left;
    if (left.size() < kColumn) {
      left.resize(kColumn, ' ');
    } else {
      left += "  ";
    }
    return left + text + "\n";
  };
  std::string out = usage + "\n" + summary + "\n\nflags:\n";
  for (const FlagSpec& s : specs_) {
    std::string def;
    if (s.default_text == kRequired) {
      def = "(required)";
    } else if (!s.default_text.empty()) {
      def = "(default: " + s.default_text + ")";
    } else {
      def = s.metavar.empty() ? "(default: off)" : "(default: none)";
    }
    out += line("--" + s.name + (s.metavar.empty() ? "" : " " + s.metavar), s.help + " " + def);
  }
  out += line("-h, --help", "print this help and exit");
  out += line("--version", "print the version and exit");
  out += "Backend flags (--isa, --no-amx, --no-huge-pages) apply to every command: see 'deepinfer --help'.\n";
  return out;
}

bool Flags::Has(const std::string& name) const { return values_.count(name) > 0; }

std::string Flags::GetString(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

StatusOr<std::string> Flags::Required(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) {
    return InvalidArgument("missing required flag --" + name +
                           (name == positional_ ? " (or give it as the first argument)" : ""));
  }
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

void AddFlags(std::vector<FlagSpec>* specs, const std::vector<FlagSpec>& more) {
  specs->insert(specs->end(), more.begin(), more.end());
}

bool ParseOrExit(Flags* flags, const std::vector<std::string>& args, const std::string& command,
                 const std::string& usage, const std::string& summary, int* exit_code) {
  if (Status s = flags->Parse(args); !s.ok()) {
    *exit_code = Fail(command, s.message(), 2);
    return false;
  }
  if (flags->version_requested()) {
    std::printf("%s\n", VersionLine().c_str());
    *exit_code = 0;
    return false;
  }
  if (flags->help_requested()) {
    const std::string text = flags->Help(usage, summary);
    std::fwrite(text.data(), 1, text.size(), stdout);
    *exit_code = 0;
    return false;
  }
  return true;
}

int Fail(const std::string& command, const std::string& message, int code) {
  std::fprintf(stderr, "deepinfer %s: %s\n", command.c_str(), message.c_str());
  return code;
}

}  // namespace deepinfer::tools
