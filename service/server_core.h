#pragma once

// What the HTTP server's three parts share: server.cpp (lifecycle, accepting, the hand-over
// between event loops), http_session.cpp (reading requests, limits, routing, replies) and
// stream_writer.cpp (a generation's pump, writer and disconnect watch). Only those three files
// include it, since it brings in Asio and Beast (about 20 s of compile time per file).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "service/api_keys.h"
#include "service/config.h"
#include "service/model_service.h"
#include "service/openai/response_common.h"
#include "service/preparation_queue.h"
#include "service/responses/response_store.h"
#include "service/routes.h"
#include "service/server.h"
#include "service/service_metrics.h"

namespace tern::service::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using asio::awaitable;
using asio::use_awaitable;
using Request = http::request<http::string_body>;

inline constexpr auto kUseTuple = asio::as_tuple(use_awaitable);

inline Clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

// True when the coroutine's parent (an || race) has asked it to stop. Checked right after each
// wait, before the next co_await would throw operation_aborted.
inline bool cancelled(const asio::cancellation_state& state) {
  return state.cancelled() != asio::cancellation_type::none;
}

// Per-request bookkeeping for metrics and the access log.
struct RequestRecord {
  Clock::time_point start = Clock::now();
  std::string model;
  const Route* route = nullptr;  // null until the request matched a row of the table
  int status = 200;
  Usage usage;
  std::string_view reason;  // why the server ended a response early: slow_client, drain_timeout
};

// An error body in one API's shape: openai::encode_error, or anthropic::error_body on the
// Anthropic endpoints.
using ErrorEncoder = std::string (*)(const openai::ApiError&);

// A complete, non-streamed answer, as handlers return it; the session writes it.
struct Reply {
  int status = 200;
  std::string body;
  std::string_view content_type = "application/json";
  int retry_after_s = 0;  // > 0 adds Retry-After
  bool keep_alive = true;

  static Reply json(std::string body, int status = 200) { return Reply{status, std::move(body)}; }
  static Reply error(const openai::ApiError& error, bool keep_alive = true,
                     ErrorEncoder encode = &openai::encode_error);
};

struct StreamState;  // stream_writer.cpp

// One server's state. Control-loop (`io`) and streams-loop (`streams_io`) coroutines read it;
// what they change is atomic or, for open generations, under generations_mutex.
struct ServerCore {
  ServerCore(const ServerConfig& config_in, ModelService& models_in, ServiceMetrics& metrics_in,
             Server::Options options_in);
  ~ServerCore();

  const ServerConfig config;
  ModelService& models;
  ServiceMetrics& metrics;
  const Server::Options options;
  const ApiKeys keys;
  // Stored Responses-API answers (previous_response_id, GET/DELETE /v1/responses/{id}).
  responses::ResponseStore responses;
  // Before the event loops: destroying them destroys suspended requests, which unlist theirs.
  std::mutex generations_mutex;
  std::set<StreamState*> open_generations;  // under generations_mutex
  // Two event loops: `io` (one thread) accepts, reads requests and answers the operational
  // endpoints; `streams_io` (io_threads threads) carries generation requests and their streams.
  asio::io_context io;
  asio::io_context streams_io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> streams_work;
  tcp::acceptor acceptor;
  asio::signal_set signals;
  // ModelService calls (rendering, tokenizing), off the event loops, shared fairly by clients.
  PreparationQueue preparation;
  int bound_port = 0;
  std::atomic<bool> draining{false};
  std::atomic<std::size_t> connections{0};
  std::atomic<std::size_t> active_requests{0};
  std::size_t over_cap_reads = 0;  // control thread only
  std::atomic<bool> drain_timed_out{false};
};

// Counts an open connection for as long as it lives.
class ConnectionCount {
 public:
  explicit ConnectionCount(ServerCore& core);
  ~ConnectionCount();
  ConnectionCount(const ConnectionCount&) = delete;
  ConnectionCount& operator=(const ConnectionCount&) = delete;

 private:
  ServerCore& core_;
};

// --- server.cpp ---------------------------------------------------------------------------------

// Re-registers the connection with the streams loop and continues its session there, starting
// with `request` (already counted in active_requests). False when the socket could not be moved.
bool hand_over(ServerCore& core, beast::tcp_stream& stream, beast::flat_buffer& buffer,
               Request& request, std::unique_ptr<ConnectionCount>& count);

// --- http_session.cpp ---------------------------------------------------------------------------

// One connection's requests, in order. A session starts on the control loop (`pending` null)
// and reads requests there; the first generation request hands the connection over to the
// streams loop, where a new session continues with it as `pending`.
awaitable<void> run_session(ServerCore& core, tcp::socket socket, beast::flat_buffer buffer,
                            std::unique_ptr<Request> pending,
                            std::unique_ptr<ConnectionCount> count);

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

// --- stream_writer.cpp --------------------------------------------------------------------------

// Streams a generation as SSE: the header, then chunks as the engine produces them, with
// keepalive comments, a bounded buffer per stream and a watch for the client hanging up.
awaitable<bool> stream_events(ServerCore& core, beast::tcp_stream& stream,
                              beast::flat_buffer& buffer, const Request& request,
                              RequestRecord& record, GenerationStream& source,
                              openai::ChunkEncoder& encoder);

// Collects a whole generation for one JSON body. nullopt when the client left.
using EncodeChoices =
    std::function<std::string(const std::vector<openai::ChoiceOutput>&, const Usage&)>;
awaitable<std::optional<Reply>> collect_events(ServerCore& core, beast::tcp_stream& stream,
                                               beast::flat_buffer& buffer, RequestRecord& record,
                                               GenerationStream& source, EncodeChoices encode,
                                               ErrorEncoder encode_error = &openai::encode_error);

// The drain timeout ran out: every open generation ends with an error event. Returns how many.
std::size_t cut_open_generations(ServerCore& core);

}  // namespace tern::service::detail
