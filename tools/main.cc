// deepinfer: command-line entry point. Dispatches to one subcommand.
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "backend/cpu/backend_config.h"
#include "core/version.h"
#include "tools/commands.h"

namespace {

struct Command {
  const char* name;
  int (*run)(const deepinfer::tools::Args&);
  const char* summary;
};

const Command kCommands[] = {
    {"generate", deepinfer::tools::RunGenerate, "generate a completion for a prompt"},
    {"score", deepinfer::tools::RunScore, "print per-position log-probs of a token sequence (JSON lines)"},
    {"info", deepinfer::tools::RunInfo,
     "describe a checkpoint: architecture, hyper-parameters, dtypes, vocab"},
    {"synth", deepinfer::tools::RunSynth, "write a random-weight model of a named shape"},
    {"serve", deepinfer::tools::RunServe, "run the OpenAI-compatible HTTP server"},
    {"bench", deepinfer::tools::RunBench, "offline benchmark: prefill and decode tokens/s per batch size"},
    {"bench-serve", deepinfer::tools::RunBenchServe, "load generator against a running server"},
    {"constrain", deepinfer::tools::RunConstrain, "run the structured-output engine alone over a text"},
};

void PrintUsage(FILE* out) {
  std::fprintf(out, "usage: deepinfer COMMAND [flags]   (deepinfer --version: the version)\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\nRun 'deepinfer COMMAND --help' for a command's flags.\n"
               "Backend flags, for every command (override DEEPINFER_ISA / _AMX / _HUGE_PAGES):\n"
               "  --isa scalar|avx2|avx512   force a kernel level (default: the best the CPU has)\n"
               "  --no-amx                   the AVX-512 kernels instead of AMX tiles\n"
               "  --no-huge-pages            packed weights on plain 4 KiB pages\n");
}

// Takes the backend flags out of `args` (anywhere after the command) into
// *config, over what the environment said. False, with a message, for a bad
// --isa.
bool TakeBackendFlags(std::vector<std::string>* args, deepinfer::cpu::BackendConfig* config) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (a == "--no-amx") {
      config->amx = false;
    } else if (a == "--no-huge-pages") {
      config->huge_pages = false;
    } else if (a == "--isa" || a.rfind("--isa=", 0) == 0) {
      std::string value;
      if (a == "--isa") {
        if (i + 1 >= args->size()) {
          std::fprintf(stderr, "deepinfer: --isa needs a value (scalar, avx2 or avx512)\n");
          return false;
        }
        value = (*args)[++i];
      } else {
        value = a.substr(6);
      }
      config->isa = deepinfer::cpu::IsaFromName(value);
      if (!config->isa) {
        std::fprintf(stderr, "deepinfer: --isa must be scalar, avx2 or avx512 (got '%s')\n", value.c_str());
        return false;
      }
    } else {
      rest.push_back(a);
    }
  }
  *args = std::move(rest);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return 2;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(stdout);
    return 0;
  }
  if (name == "--version" || name == "-V" || name == "version") {
    std::printf("%s\n", deepinfer::VersionLine().c_str());
    return 0;
  }
  std::vector<std::string> raw(argv + 2, argv + argc);
  // The backend's settings: the environment (DEEPINFER_ISA, DEEPINFER_AMX,
  // DEEPINFER_HUGE_PAGES), then the flags, applied once before any kernel.
  deepinfer::cpu::BackendConfig backend = deepinfer::cpu::BackendConfigFromEnv();
  if (!TakeBackendFlags(&raw, &backend)) return 2;
  deepinfer::cpu::ApplyBackendConfig(backend);
  deepinfer::tools::Args args(raw.begin(), raw.end());
  for (const auto& c : kCommands) {
    if (name != c.name) continue;
    // The last line of defence for resources the OS refuses deep inside a
    // library (a thread under a memory or process limit, memory itself):
    // one clear line and exit 1, never std::terminate's abort.
    try {
      return c.run(args);
    } catch (const std::system_error& e) {
      std::fprintf(stderr,
                   "deepinfer %s: the system refused a resource (%s); lower --threads or raise the "
                   "process limits (ulimit -u / -v)\n",
                   c.name, e.what());
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "deepinfer %s: out of memory\n", c.name);
    }
    return 1;
  }
  std::fprintf(stderr, "deepinfer: unknown command '%s' (run 'deepinfer --help' for the list)\n",
               name.c_str());
  return 2;
}
