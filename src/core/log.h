// Minimal leveled logging to stderr. stdout belongs to command output
// (e.g. `deepinfer generate` prints only the completion there).
#pragma once

#include <string>

namespace deepinfer {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kQuiet = 4 };

// Process-wide threshold; set once at start-up from flags (default kInfo).
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

// printf-style; appends a newline. Thread-safe (one write per line).
void Log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace deepinfer

#define DI_LOG_INFO(...) ::deepinfer::Log(::deepinfer::LogLevel::kInfo, __VA_ARGS__)
#define DI_LOG_WARN(...) ::deepinfer::Log(::deepinfer::LogLevel::kWarning, __VA_ARGS__)
#define DI_LOG_ERROR(...) ::deepinfer::Log(::deepinfer::LogLevel::kError, __VA_ARGS__)
#define DI_LOG_DEBUG(...) ::deepinfer::Log(::deepinfer::LogLevel::kDebug, __VA_ARGS__)
