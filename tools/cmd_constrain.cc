// Placeholder until this subcommand lands (owned by its issue's work).
#include <cstdio>

#include "tools/commands.h"

namespace deepinfer::tools {

int RunConstrain(const Args& args) {
  std::fprintf(stderr, "deepinfer: this command is not available in this build yet\n");
  return 2;
}

}  // namespace deepinfer::tools
