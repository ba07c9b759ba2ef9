#include "core/version.h"

#ifndef DEEPINFER_VERSION
#define DEEPINFER_VERSION "0.0.0"
#endif
#ifndef DEEPINFER_GIT_REVISION
#define DEEPINFER_GIT_REVISION "unknown"
#endif

namespace deepinfer {

const char* Version() { return DEEPINFER_VERSION; }
const char* GitRevision() { return DEEPINFER_GIT_REVISION; }
std::string VersionLine() { return std::string("deepinfer ") + Version() + " (git " + GitRevision() + ")"; }

}  // namespace deepinfer
