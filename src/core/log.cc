#include "core/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace deepinfer {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
const char* Prefix(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug: ";
    case LogLevel::kInfo:
      return "";
    case LogLevel::kWarning:
      return "warning: ";
    case LogLevel::kError:
      return "error: ";
    case LogLevel::kQuiet:
      return "";
  }
  return "";
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void Log(LogLevel level, const char* fmt, ...) {
  if (static_cast<int>(level) < g_level.load()) return;
  char buf[4096];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  std::fprintf(stderr, "%s%s\n", Prefix(level), buf);
}

}  // namespace deepinfer
