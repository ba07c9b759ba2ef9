#include "backend/cpu/backend_config.h"

#include <cstdlib>
#include <cstring>

#include "core/check.h"
#include "core/log.h"

namespace deepinfer::cpu {
namespace {

BackendConfig& Config() {
  static BackendConfig config;
  return config;
}

// "0" turns a default-on switch off; anything else (or unset) leaves it on.
bool SwitchOn(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr || std::strcmp(v, "0") != 0;
}

}  // namespace

BackendConfig BackendConfigFromEnv() {
  BackendConfig c;
  if (const char* isa = std::getenv("DEEPINFER_ISA"); isa != nullptr && *isa != '\0') {
    c.isa = IsaFromName(isa);
    if (!c.isa) DI_LOG_WARN("DEEPINFER_ISA=%s is not one of scalar|avx2|avx512; ignored", isa);
  }
  c.amx = SwitchOn("DEEPINFER_AMX");
  c.huge_pages = SwitchOn("DEEPINFER_HUGE_PAGES");
  return c;
}

void ApplyBackendConfig(const BackendConfig& config) {
  Config() = config;
  // The level is decided on the first kernel call; applying a config after
  // that must not silently leave another level running.
  const std::optional<Isa> decided = DecidedIsa();
  DI_CHECK_MSG(!decided || *decided == ResolveIsa(config.isa),
               "ApplyBackendConfig after the ISA level was fixed (call it at start-up)");
}

const BackendConfig& ActiveBackendConfig() { return Config(); }

}  // namespace deepinfer::cpu
