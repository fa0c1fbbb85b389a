#pragma once

#include <string>

#include "engine/expected.h"

namespace tern::service {

// The numeric address a listen host stands for: an IP address as written, or what a host name
// resolves to through the system resolver (getaddrinfo: /etc/hosts, then DNS). A name with
// both kinds of address gets its first IPv4 one, since "localhost" should listen where
// 127.0.0.1 clients connect. The error reads "'HOST' is not an IP address and does not
// resolve: REASON", for callers to prefix with the key or option that named the host.
Expected<std::string> resolve_host(const std::string& host);

}  // namespace tern::service
