// deepinfer info: describe a checkpoint (architecture, hyper-parameters,
// tensor dtypes, vocabulary) as "key: value" lines on stdout.
#include <algorithm>
#include <cstdio>

#include "checkpoint/checkpoint.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace deepinfer::tools {

namespace {

constexpr const char* kUsageLine = "usage: deepinfer info [--model] MODEL";
constexpr const char* kSummary =
    "Describes a checkpoint: architecture, hyper-parameters, tensor dtypes, vocabulary.";

}  // namespace

int RunInfo(const Args& args) {
  Flags flags({{"model", "PATH", "the checkpoint: a .gguf file or an HF directory (also the first argument)",
                kRequired}},
              "model");
  int code = 0;
  if (!ParseOrExit(&flags, args, "info", kUsageLine, kSummary, &code)) return code;
  StatusOr<std::string> path = flags.Required("model");
  if (!path.ok()) {
    return Fail("info", path.status().message(), 2);
  }
  LoadOptions options;
  options.num_threads = 1;  // nothing to compute
  StatusOr<LoadedModel> loaded = LoadModel(*path, options);
  if (!loaded.ok()) {
    return Fail("info", loaded.status().message());
  }
  const std::string text = loaded->Describe();
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace deepinfer::tools
