// A small, strict flag parser for the CLI: `--name value` and `--name=value`,
// boolean `--name`, `-h` / `--help`, and at most one positional argument that
// stands for a named flag (`deepinfer serve MODEL` = `--model MODEL`).
// Unknown flags, missing values and stray arguments are usage errors that
// name the flag. Each command declares its flags once, as a table of
// FlagSpec: the parser accepts exactly those and `--help` lists exactly
// those, each with its one-line description and default, so the two cannot
// drift apart.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer::tools {

struct FlagSpec {
  std::string name;     // without "--"
  std::string metavar;  // what the value is ("N", "PATH"); empty: a boolean switch
  std::string help;     // one line
  // Shown as "(default: X)". Empty: "(default: none)"; a boolean switch
  // without one shows "(default: off)". kRequired: "(required)".
  std::string default_text;
};

inline const std::string kRequired = "\x01required";

class Flags {
 public:
  // `positional`: the value flag that a single bare argument fills ("" none).
  Flags(std::vector<FlagSpec> specs, std::string positional = "");

  // -h / --help (or --version) anywhere: help_requested() (version_requested())
  // and nothing else is checked.
  Status Parse(const std::vector<std::string>& args);
  bool help_requested() const { return help_requested_; }
  bool version_requested() const { return version_requested_; }

  // "usage: deepinfer CMD ...", the summary, then one line per flag.
  std::string Help(const std::string& usage, const std::string& summary) const;

  bool Has(const std::string& name) const;
  std::string GetString(const std::string& name, const std::string& def = "") const;
  StatusOr<std::string> Required(const std::string& name) const;
  StatusOr<int64_t> GetInt(const std::string& name, int64_t def) const;
  StatusOr<double> GetDouble(const std::string& name, double def) const;
  bool GetBool(const std::string& name) const { return Has(name); }

 private:
  const FlagSpec* Find(const std::string& name) const;

  std::vector<FlagSpec> specs_;
  std::string positional_;
  bool help_requested_ = false;
  bool version_requested_ = false;
  std::map<std::string, std::string> values_;
};

// Appends `more` to `specs` (shared groups: backend, structured, speculative).
void AddFlags(std::vector<FlagSpec>* specs, const std::vector<FlagSpec>& more);

// Parses `args` against `flags`. Returns true when the command should go on;
// false with *exit_code set when it is done: 0 after printing --help or
// --version on stdout, 2 after one "deepinfer CMD: message" line on stderr.
bool ParseOrExit(Flags* flags, const std::vector<std::string>& args, const std::string& command,
                 const std::string& usage, const std::string& summary, int* exit_code);

// Prints "deepinfer CMD: message" on stderr and returns `code`.
int Fail(const std::string& command, const std::string& message, int code = 1);

}  // namespace deepinfer::tools
