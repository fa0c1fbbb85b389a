#pragma once

// What server.cpp offers the HTTP session: moving a connection to the streams loop.
#include <memory>

#include "service/server_core.h"

namespace tern::service::detail {

// Re-registers the connection with the streams loop and continues its session there, starting
// with `request` (already counted in active_requests). False when the socket could not be moved.
bool hand_over(ServerCore& core, beast::tcp_stream& stream, beast::flat_buffer& buffer,
               Request& request, std::unique_ptr<ConnectionCount>& count);

}  // namespace tern::service::detail
