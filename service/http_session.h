#pragma once

// What http_session.cpp offers the server and the stream writer: a connection's session, the
// answer to one request, replies, request ids and the access log.
#include <memory>
#include <string>
#include <string_view>

#include "service/server_core.h"

namespace tern::service::detail {

// One connection's requests, in order, on the control loop, until the first generation request,
// which hands the connection over to the streams loop (server_hand_over.h).
awaitable<void> run_session(ServerCore& core, tcp::socket socket,
                            std::unique_ptr<ConnectionCount> count);

// The session continued on the streams loop: answers the request it was handed over with, then
// the connection's later requests.
awaitable<void> continue_on_streams(ServerCore& core, tcp::socket socket, beast::flat_buffer buffer,
                                    Request request, std::unique_ptr<ConnectionCount> count);

// Routes one request that has been read and answers it. False when the connection must close.
awaitable<bool> answer(ServerCore& core, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                       const Request& request, RequestRecord& record);

// Writes a Reply as the response to `request`; false when the connection must close.
awaitable<bool> send_reply(ServerCore& core, beast::tcp_stream& stream, const Request& request,
                           RequestRecord& record, Reply reply);

// Keeps the client's X-Request-Id when it is usable, else gives the request a fresh one.
void assign_request_id(Request& request);
// The client's address and port for the access log; "-" once the peer is gone.
std::string peer_address(const tcp::socket& socket);
// The request's metrics and its access-log line.
void log_request(ServerCore& core, const Request& request, const RequestRecord& record,
                 std::string_view client);

}  // namespace tern::service::detail
