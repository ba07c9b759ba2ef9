// Structured-output flags shared by `deepinfer constrain` and `deepinfer
// generate`: --json-schema F | --json-object | --regex R | --grammar F |
// --choice A,B [--any-whitespace]. The vocabulary comes from
// structured/tokenizer_vocabulary.h, as the server's does.
//
// --json-schema takes a file path, or the schema itself when the value
// starts with '{' (or is true/false). --grammar takes a file: GBNF when its
// name ends in .gbnf or its text contains "::=", Lark when it ends in .lark
// or otherwise. --choice splits on ',' (a literal comma: "\,").
// Header-only: the CLI globs only cmd_*.cc sources.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/structured_output.h"
#include "tools/flags.h"

namespace deepinfer::tools {

inline std::vector<FlagSpec> StructuredFlagSpecs() {
  return {
      {"json-schema", "FILE|JSON", "output must match this JSON Schema (a file, or the schema inline)", ""},
      {"json-object", "", "output must be a JSON object", ""},
      {"regex", "RE", "output must match this regular expression", ""},
      {"grammar", "FILE", "output must match this grammar (GBNF or Lark)", ""},
      {"choice", "A,B,...", "output must be one of these strings (\\, for a literal comma)", ""},
      {"any-whitespace", "", "JSON output may use any whitespace (default: compact)", ""}};
}

inline StatusOr<std::string> ReadWholeFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + what + " '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

inline std::vector<std::string> SplitChoices(const std::string& list) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '\\' && i + 1 < list.size() && list[i + 1] == ',') {
      out.back() += ',';
      ++i;
    } else if (list[i] == ',') {
      out.emplace_back();
    } else {
      out.back() += list[i];
    }
  }
  return out;
}

// Reads the structured-output flags. Returns false in *present when none is
// given; InvalidArgument when more than one is.
inline StatusOr<StructuredOutputSpec> ParseStructuredFlags(const Flags& flags, bool* present) {
  int given = 0;
  for (const char* f : {"json-schema", "json-object", "regex", "grammar", "choice"}) {
    given += flags.Has(f) ? 1 : 0;
  }
  *present = given > 0;
  StructuredOutputSpec spec;
  spec.any_whitespace = flags.Has("any-whitespace");
  if (given == 0) {
    if (spec.any_whitespace) return InvalidArgument("--any-whitespace needs --json-schema or --json-object");
    return spec;
  }
  if (given > 1) {
    return InvalidArgument("give only one of --json-schema, --json-object, --regex, --grammar, --choice");
  }
  using Kind = StructuredOutputSpec::Kind;
  if (flags.Has("json-schema")) {
    spec.kind = Kind::kJsonSchema;
    std::string v = flags.GetString("json-schema");
    if (!v.empty() && (v[0] == '{' || v == "true" || v == "false")) {
      spec.text = v;
    } else {
      DI_ASSIGN_OR_RETURN(spec.text, ReadWholeFile(v, "JSON Schema file"));
    }
  } else if (flags.Has("json-object")) {
    spec.kind = Kind::kJsonObject;
  } else if (flags.Has("regex")) {
    spec.kind = Kind::kRegex;
    spec.text = flags.GetString("regex");
  } else if (flags.Has("grammar")) {
    std::string path = flags.GetString("grammar");
    DI_ASSIGN_OR_RETURN(spec.text, ReadWholeFile(path, "grammar file"));
    bool gbnf =
        EndsWith(path, ".gbnf") || (!EndsWith(path, ".lark") && spec.text.find("::=") != std::string::npos);
    spec.kind = gbnf ? Kind::kGbnf : Kind::kLark;
  } else {
    spec.kind = Kind::kChoice;
    spec.choices = SplitChoices(flags.GetString("choice"));
  }
  if (spec.any_whitespace && spec.kind != Kind::kJsonSchema && spec.kind != Kind::kJsonObject) {
    return InvalidArgument("--any-whitespace applies only to --json-schema / --json-object");
  }
  return spec;
}

}  // namespace deepinfer::tools
