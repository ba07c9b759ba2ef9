// `deepinfer serve --host/--port`, checked before the model loads: a host
// name (localhost, a machine's name) resolves with getaddrinfo to the
// numeric address the HTTP server binds, and the address is test-bound so
// a port in use is reported in milliseconds, not after minutes of loading.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace deepinfer::tools {

// An IPv4/IPv6 literal is returned as is; a name resolves to its first
// address (IPv4 preferred, as "localhost" -> 127.0.0.1). InvalidArgument
// naming the host when it does not resolve.
StatusOr<std::string> ResolveListenHost(const std::string& host);

// Binds and closes a socket on address:port (port 0 always passes).
// Unavailable naming the address and the OS's reason otherwise.
Status CheckCanListen(const std::string& numeric_address, uint16_t port);

}  // namespace deepinfer::tools
