// deepinfer info: describe a checkpoint (architecture, hyper-parameters,
// tensor dtypes, vocabulary) as "key: value" lines on stdout.
#include <algorithm>
#include <cstdio>

#include "checkpoint/checkpoint.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace deepinfer::tools {

namespace {

constexpr char kUsage[] =
    "usage: deepinfer info --model PATH\n"
    "  --model  .gguf file or HF checkpoint directory\n";

}  // namespace

int RunInfo(const Args& args) {
  if (std::find(args.begin(), args.end(), "--help") != args.end()) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  Flags flags({"model"}, {});
  if (Status s = flags.Parse(args); !s.ok()) {
    return Fail("info", s.message(), 2);
  }
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
