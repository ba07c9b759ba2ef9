#include "tools/listen_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace deepinfer::tools {

StatusOr<std::string> ResolveListenHost(const std::string& host) {
  if (host.empty()) return InvalidArgument("--host must not be empty");
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1) return host;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
    return InvalidArgument("--host '" + host + "' does not resolve (" + gai_strerror(rc) + ")");
  }
  std::string chosen;
  for (int family : {AF_INET, AF_INET6}) {
    for (addrinfo* a = found; a != nullptr && chosen.empty(); a = a->ai_next) {
      if (a->ai_family != family) continue;
      char text[INET6_ADDRSTRLEN] = {};
      const void* addr =
          family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
              : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
      if (inet_ntop(family, addr, text, sizeof text) != nullptr) chosen = text;
    }
  }
  freeaddrinfo(found);
  if (chosen.empty()) return InvalidArgument("--host '" + host + "' resolves to no IPv4 or IPv6 address");
  return chosen;
}

Status CheckCanListen(const std::string& numeric_address, uint16_t port) {
  if (port == 0) return Status::Ok();
  sockaddr_storage storage{};
  socklen_t len = 0;
  int family = AF_INET;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (inet_pton(AF_INET, numeric_address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, numeric_address.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
  } else {
    return InvalidArgument("--host: '" + numeric_address + "' is not an IP address");
  }
  const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unavailable(std::string("cannot create a socket: ") + std::strerror(errno));
  // As the server binds (SO_REUSEADDR): a port in TIME_WAIT is not "in use".
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&storage), len);
  const int err = errno;
  close(fd);
  if (rc != 0) {
    return Unavailable("cannot listen on " + numeric_address + ":" + std::to_string(port) + " (" +
                       std::strerror(err) + ")");
  }
  return Status::Ok();
}

}  // namespace deepinfer::tools
