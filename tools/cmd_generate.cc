// PLACEHOLDER: replaced by the owner of this subcommand.
#include "tools/commands.h"
#include "tools/flags.h"

namespace deepinfer::tools {
int RunGenerate(const Args& args) { return Fail("generate", "not built yet"); }
}  // namespace deepinfer::tools
