// PLACEHOLDER: replaced by the owner of this subcommand.
#include "tools/commands.h"
#include "tools/flags.h"

namespace deepinfer::tools {
int RunSynth(const Args& args) { return Fail("synth", "not built yet"); }
}  // namespace deepinfer::tools
