#include "service/host_address.h"

#include <netdb.h>
#include <sys/socket.h>

#include <memory>

#include <fmt/format.h>

namespace tern::service {

Expected<std::string> resolve_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int status = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (status != 0 || found == nullptr) {
    return Error{fmt::format("'{}' is not an IP address and does not resolve: {}", host,
                             status != 0 ? gai_strerror(status) : "no address")};
  }
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owner(found, &freeaddrinfo);
  const addrinfo* chosen = found;
  for (const addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    if (entry->ai_family == AF_INET) {
      chosen = entry;
      break;
    }
  }
  char numeric[NI_MAXHOST];
  if (const int printed = getnameinfo(chosen->ai_addr, chosen->ai_addrlen, numeric, sizeof numeric,
                                      nullptr, 0, NI_NUMERICHOST);
      printed != 0) {
    return Error{fmt::format("'{}' resolves to an address that cannot be printed: {}", host,
                             gai_strerror(printed))};
  }
  return std::string(numeric);
}

}  // namespace tern::service
