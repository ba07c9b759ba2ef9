// PLACEHOLDER: replaced by the owner of this subcommand.
#include "tools/commands.h"
#include "tools/flags.h"

namespace deepinfer::tools {
int RunScore(const Args& args) { return Fail("score", "not built yet"); }
}  // namespace deepinfer::tools
