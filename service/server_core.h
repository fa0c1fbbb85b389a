#pragma once

// What the HTTP server's three parts share: server.cpp (lifecycle, accepting, the hand-over
// between event loops), http_session.cpp (reading requests, limits, routing, replies) and
// stream_writer.cpp (a generation's pump, writer and disconnect watch). Each offers the others
// its functions in a header of its own (server_hand_over.h, http_session.h, stream_writer.h).
// Only those three files include these headers, since they bring in Asio and Beast (about 20 s
// of compile time per file).
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

#include "service/api/response_common.h"
#include "service/api_keys.h"
#include "service/config.h"
#include "service/model_service.h"
#include "service/preparation_queue.h"
#include "service/responses/response_store.h"
#include "service/routes.h"
#include "service/server_options.h"
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

// An error body in one API's shape: api::encode_error, or anthropic::error_body on the
// Anthropic endpoints.
using ErrorEncoder = std::string (*)(const api::ApiError&);

// A complete, non-streamed answer, as handlers return it; the session writes it.
struct Reply {
  int status = 200;
  std::string body;
  std::string_view content_type = "application/json";
  int retry_after_s = 0;  // > 0 adds Retry-After
  bool keep_alive = true;

  static Reply json(std::string body, int status = 200) { return Reply{status, std::move(body)}; }
  static Reply error(const api::ApiError& error, bool keep_alive = true,
                     ErrorEncoder encode = &api::encode_error);
};

struct StreamState;  // stream_writer.cpp

// One server's state. Control-loop (`io`) and streams-loop (`streams_io`) coroutines read it;
// what they change is atomic or, for open generations, under generations_mutex.
struct ServerCore {
  ServerCore(const ServerConfig& config_in, ModelService& models_in, ServiceMetrics& metrics_in,
             ServerOptions options_in);
  ~ServerCore();

  const ServerConfig config;
  ModelService& models;
  ServiceMetrics& metrics;
  const ServerOptions options;
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

}  // namespace tern::service::detail
