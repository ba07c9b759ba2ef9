// A small, strict flag parser for the CLI: `--name value` and `--name=value`,
// boolean `--name`. Unknown flags and missing values are usage errors that
// name the flag.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer::tools {

class Flags {
 public:
  // value_flags take a value; bool_flags do not. Flag names without "--".
  Flags(std::set<std::string> value_flags, std::set<std::string> bool_flags);

  Status Parse(const std::vector<std::string>& args);

  bool Has(const std::string& name) const;
  std::string GetString(const std::string& name, const std::string& def = "") const;
  StatusOr<std::string> Required(const std::string& name) const;
  StatusOr<int64_t> GetInt(const std::string& name, int64_t def) const;
  StatusOr<double> GetDouble(const std::string& name, double def) const;
  bool GetBool(const std::string& name) const { return Has(name); }

 private:
  std::set<std::string> value_flags_, bool_flags_;
  std::map<std::string, std::string> values_;
};

// Prints "deepinfer CMD: message" on stderr and returns `code`.
int Fail(const std::string& command, const std::string& message, int code = 1);

}  // namespace deepinfer::tools
