// Subcommands of the `deepinfer` binary. Each takes the arguments after the
// subcommand name and returns the process exit code (0 ok, 1 runtime error,
// 2 usage error). Each prints one clear line on stderr for any user error.
#pragma once

#include <string>
#include <vector>

namespace deepinfer::tools {

using Args = std::vector<std::string>;

int RunGenerate(const Args& args);
int RunScore(const Args& args);
int RunInfo(const Args& args);
int RunSynth(const Args& args);
int RunServe(const Args& args);
int RunBench(const Args& args);
int RunBenchServe(const Args& args);
int RunConstrain(const Args& args);

}  // namespace deepinfer::tools
