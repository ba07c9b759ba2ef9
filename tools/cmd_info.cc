// PLACEHOLDER: replaced by the owner of this subcommand.
#include "tools/commands.h"
#include "tools/flags.h"

namespace deepinfer::tools {
int RunInfo(const Args& args) { return Fail("info", "not built yet"); }
}  // namespace deepinfer::tools
