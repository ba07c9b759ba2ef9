// The build's version: the project version from CMakeLists.txt and the git
// commit the build was configured at ("unknown" outside a git checkout).
#pragma once

#include <string>

namespace deepinfer {

const char* Version();      // "0.1.0"
const char* GitRevision();  // "abc123def456" or "unknown"
std::string VersionLine();  // "deepinfer 0.1.0 (git abc123def456)"

}  // namespace deepinfer
