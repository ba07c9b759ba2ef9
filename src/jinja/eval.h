// jinja::Template: a parsed Jinja2 template (the subset chat templates use)
// and its bounded evaluator. Parse once, Render many times; a Template is
// immutable after Parse, so Render may run concurrently from many threads.
//
// Semantics follow Jinja2 as Hugging Face runs it (ImmutableSandboxedEnvironment,
// trim_blocks + lstrip_blocks, loopcontrols): undefined names are falsy,
// render as "" and iterate as empty, but reading an attribute of an
// undefined value is an error; "set" inside a for loop stays inside the
// iteration (use namespace() to carry state out).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "jinja/ast.h"
#include "jinja/builtins.h"
#include "jinja/parser.h"
#include "jinja/value.h"

namespace deepinfer::jinja {

using Context = std::vector<std::pair<std::string, Value>>;

class Template {
 public:
  // InvalidArgument "chat template line L:C: ..." on a syntax error.
  static StatusOr<Template> Parse(const std::string& source, const ParseLimits& limits = {});

  // Renders with `context` as the template's variables (on top of the
  // global functions range, namespace, dict, raise_exception, strftime_now).
  // Any runtime error, raise_exception() or exceeded limit is an
  // InvalidArgument with the line:column of the expression at fault.
  StatusOr<std::string> Render(const Context& context, const RenderLimits& limits = {}) const;

 private:
  explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}
  std::shared_ptr<const Body> body_;
};

}  // namespace deepinfer::jinja
