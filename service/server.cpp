#include "service/server.h"

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "kernels/this_thread.h"
#include "service/api_keys.h"
#include "service/host_address.h"
#include "service/openai/chat_response.h"
#include "service/openai/completion_response.h"
#include "service/openai/models_response.h"
#include "service/request_headers.h"
#include "service/routes.h"
#include "service/sse.h"

namespace tern::service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using asio::awaitable;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

constexpr auto kUseTuple = asio::as_tuple(use_awaitable);
// After the drain timeout cut the open streams, how long their error events may take to go out.
constexpr auto kCutGrace = std::chrono::seconds(2);
using Request = http::request<http::string_body>;

std::chrono::steady_clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// True when `signal_number` is ignored, as nohup leaves SIGHUP.
bool signal_ignored(int signal_number) {
  struct sigaction current {};
  return sigaction(signal_number, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
}

// True when the coroutine's parent (an || race) has asked it to stop. Checked right after each
// wait, before the next co_await would throw operation_aborted.
bool cancelled(const asio::cancellation_state& state) {
  return state.cancelled() != asio::cancellation_type::none;
}

// Bridges GenerationStream's waker to the connection's strand: wake() (on an engine thread)
// posts a cancel of `timer`, on which the pump waits. It keeps itself alive while armed, so a
// wake() already on its way when the connection ends finds a live object.
class StreamWaker final : public engine::ChannelWaker,
                          public std::enable_shared_from_this<StreamWaker> {
 public:
  explicit StreamWaker(const asio::any_io_executor& executor)
      : timer(executor, Clock::time_point::max()) {}

  void wake() override {
    std::shared_ptr<StreamWaker> self = std::move(self_);
    asio::post(timer.get_executor(), [self] {
      self->armed_ = false;
      self->timer.cancel();
    });
  }

  // Strand only. False when an event is already there.
  bool arm(GenerationStream& stream) {
    if (armed_) return true;
    self_ = shared_from_this();
    if (stream.arm(*this)) {
      armed_ = true;
      return true;
    }
    self_.reset();
    return false;
  }

  // Strand only, when the connection is done with the stream.
  void release(GenerationStream& stream) {
    if (armed_ && stream.disarm()) {
      armed_ = false;
      self_.reset();
    }
    // Otherwise a wake() is on its way and drops the last reference when it lands.
  }

  asio::steady_timer timer;

 private:
  std::shared_ptr<StreamWaker> self_;
  bool armed_ = false;
};

// Per-request bookkeeping for metrics and the access log.
struct RequestRecord {
  Clock::time_point start = Clock::now();
  std::string model;
  Endpoint endpoint = Endpoint::health;
  bool routed = false;
  int status = 200;
  Usage usage;
  std::string_view reason;  // why the server ended a response early: slow_client, drain_timeout
};

// The client's address and port for the access log; "-" once the peer is gone.
std::string peer_address(const tcp::socket& socket) {
  boost::system::error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return "-";
  if (peer.address().is_v6())
    return fmt::format("[{}]:{}", peer.address().to_string(), peer.port());
  return fmt::format("{}:{}", peer.address().to_string(), peer.port());
}

// Keeps the client's X-Request-Id when it is usable, else gives the request a fresh one; the
// responses and the access log then read it from the request.
void assign_request_id(Request& request) {
  if (!usable_request_id(request[kRequestIdHeader])) {
    request.set(kRequestIdHeader, new_request_id());
  }
}

// Over the connection cap, how many connections at once are read to find a probe among them,
// and for how long each: a bound on what a flood of idle connections can hold.
constexpr std::size_t kMaxOverCapReads = 256;
constexpr auto kOverCapReadTime = std::chrono::seconds(1);

}  // namespace

struct Server::Impl {
  Impl(const ServerConfig& config_in, ModelService& models_in, ServiceMetrics& metrics_in,
       Options options_in)
      : config(config_in),
        models(models_in),
        metrics(metrics_in),
        options(options_in),
        keys(config_in.api_keys),
        io(1),
        streams_io(config_in.io_threads),
        streams_work(asio::make_work_guard(streams_io)),
        acceptor(io),
        signals(io),
        pool(static_cast<std::size_t>(std::max(1, options_in.preparation_threads))) {}

  ~Impl() {
    pool.stop();
    pool.join();
  }

  // --- lifecycle -------------------------------------------------------------------------------

  void raise_file_limit() {
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
    if (limit.rlim_cur < limit.rlim_max) {
      rlimit raised = limit;
      raised.rlim_cur = limit.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
    }
    // Some descriptors go to models, logs and the listener itself.
    const std::uint64_t capacity = limit.rlim_cur > 64 ? limit.rlim_cur - 64 : 0;
    spdlog::info("open-file limit {}: room for about {} connections (max_connections {})",
                 static_cast<std::uint64_t>(limit.rlim_cur), capacity,
                 config.limits.max_connections);
    if (capacity < static_cast<std::uint64_t>(config.limits.max_connections)) {
      spdlog::warn(
          "max_connections {} exceeds what the open-file limit allows; raise it with "
          "ulimit -n or the container's nofile limit",
          config.limits.max_connections);
    }
  }

  Status start() {
    raise_file_limit();
    // Creates the streams context's reactor (an epoll, an eventfd, a timerfd) now: created
    // lazily by the first hand-over, it would fail when the descriptors have run out.
    { tcp::socket reactor_warm_up(streams_io); }
    boost::system::error_code ec;
    const auto resolved = resolve_host(config.host);
    if (!resolved) return Error{fmt::format("server.host {}", resolved.error().message)};
    const auto address = asio::ip::make_address(*resolved, ec);
    if (ec) return Error{fmt::format("server.host '{}' is not an IP address", *resolved)};
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(config.port));
    if (acceptor.open(endpoint.protocol(), ec); ec) {
      return Error{fmt::format("cannot open a socket for {}:{}: {}", config.host, config.port,
                               ec.message())};
    }
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (acceptor.bind(endpoint, ec); ec) {
      return Error{fmt::format("cannot bind {}:{}: {}", config.host, config.port, ec.message())};
    }
    if (acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
      return Error{
          fmt::format("cannot listen on {}:{}: {}", config.host, config.port, ec.message())};
    }
    bound_port = acceptor.local_endpoint(ec).port();
    asio::co_spawn(io, listen(), asio::detached);
    if (options.handle_signals) {
      signals.add(SIGTERM);
      signals.add(SIGINT);
      // A hangup (the terminal closed, a supervisor's stop) drains too, where its default action
      // would kill every stream mid-way; under nohup it stays ignored.
      if (!signal_ignored(SIGHUP)) signals.add(SIGHUP);
      wait_for_signal();
    }
    spdlog::info("listening on {}:{}", config.host, bound_port);
    return Status::success();
  }

  void wait_for_signal() {
    signals.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      if (draining.load()) {
        spdlog::warn("signal {} again: stopping now", signal);
        stop_both();
        return;
      }
      spdlog::info("signal {}: draining (up to {} s); send it again to stop now", signal,
                   config.timeouts.drain_s);
      begin_drain();
      wait_for_signal();
    });
  }

  // The calling thread runs the control context; io_threads more run the streams.
  void run() {
    std::vector<std::thread> threads;
    for (int i = 0; i < config.io_threads; ++i) {
      threads.emplace_back([this] {
        name_this_thread("tern-io");
        streams_io.run();
      });
    }
    // After the streams threads started: threads inherit the nice value of their creator.
    if (config.control_nice != 0 && !set_this_thread_nice(config.control_nice)) {
      spdlog::info("server.control_nice {} not applied (raising priority needs CAP_SYS_NICE)",
                   config.control_nice);
    }
    io.run();
    stop_both();
    for (std::thread& thread : threads) thread.join();
  }

  void stop_both() {
    streams_work.reset();
    streams_io.stop();
    io.stop();
  }

  // Strand-free: runs on an io thread via post.
  void begin_drain() {
    if (draining.exchange(true)) return;
    boost::system::error_code ignored;
    acceptor.close(ignored);
    asio::co_spawn(io, wait_for_drain(), asio::detached);
  }

  awaitable<void> wait_for_drain() {
    const auto deadline = Clock::now() + seconds(config.timeouts.drain_s);
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (active_requests.load() > 0 && Clock::now() < deadline) {
      timer.expires_after(std::chrono::milliseconds(20));
      co_await timer.async_wait(kUseTuple);
    }
    if (const std::size_t unfinished = active_requests.load(); unfinished > 0) {
      drain_timed_out.store(true);
      const std::size_t cut = cut_open_generations();
      spdlog::warn(
          "drain timeout after {} s: cut {} streams (each ends with an error event); {} "
          "requests were unfinished",
          config.timeouts.drain_s, cut, unfinished);
      // A moment for those events to reach their clients; a client that takes nothing is not
      // waited for any longer.
      const auto grace = Clock::now() + kCutGrace;
      while (active_requests.load() > 0 && Clock::now() < grace) {
        timer.expires_after(std::chrono::milliseconds(20));
        co_await timer.async_wait(kUseTuple);
      }
    } else {
      spdlog::info("drained: every in-flight request finished");
    }
    boost::system::error_code ignored;
    signals.cancel(ignored);
    stop_both();
  }

  // --- accepting -------------------------------------------------------------------------------

  awaitable<void> listen() {
    asio::steady_timer backoff(co_await asio::this_coro::executor);
    auto delay = std::chrono::milliseconds(5);
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(io), kUseTuple);
      if (draining.load() || !acceptor.is_open()) co_return;
      if (ec) {
        if (ec == asio::error::operation_aborted) co_return;
        // Out of descriptors (EMFILE/ENFILE) or a transient error: keep the open connections
        // and try again later instead of spinning.
        if (delay == std::chrono::milliseconds(5) || delay >= std::chrono::seconds(1)) {
          spdlog::warn("accept failed ({}); retrying in {} ms with {} connections open",
                       ec.message(), delay.count(), connections.load());
        }
        backoff.expires_after(delay);
        co_await backoff.async_wait(kUseTuple);
        delay = std::min<std::chrono::milliseconds>(delay * 2, std::chrono::seconds(1));
        continue;
      }
      delay = std::chrono::milliseconds(5);
      tcp::socket connection(std::move(socket));
      if (connections.load() >= static_cast<std::size_t>(config.limits.max_connections)) {
        asio::co_spawn(connection.get_executor(), reject(std::move(connection)), asio::detached);
        continue;
      }
      asio::co_spawn(connection.get_executor(),
                     session(std::move(connection), beast::flat_buffer{}, nullptr,
                             std::make_unique<ConnectionCount>(*this)),
                     asio::detached);
    }
  }

  // Over the connection cap: a short 503 and close, so clients back off instead of hanging. A
  // /health or /ready probe is answered instead, so a connection flood cannot fail it.
  awaitable<void> reject(tcp::socket socket) {
    static const std::string kResponse = [] {
      const std::string body = openai::encode_error(
          openai::service_unavailable("The server is at its connection limit", 1));
      return fmt::format(
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
          "Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{}",
          body.size(), body);
    }();
    const std::string client = peer_address(socket);
    beast::tcp_stream stream(std::move(socket));
    bool answered = false;
    if (over_cap_reads < kMaxOverCapReads) {
      ++over_cap_reads;
      answered = co_await answer_probe(stream, client);
      --over_cap_reads;
    }
    if (!answered) {
      stream.expires_after(std::chrono::seconds(5));
      co_await asio::async_write(stream, asio::buffer(kResponse), kUseTuple);
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  // Reads one request head, briefly, and answers it when it is a /health or /ready probe (on
  // the control loop, as always). False for anything else, or nothing in time.
  awaitable<bool> answer_probe(beast::tcp_stream& stream, const std::string& client) {
    beast::flat_buffer buffer;
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(
        std::min<std::uint64_t>(config.limits.max_header_bytes, UINT32_MAX)));
    // A timer rather than the stream's expiry, which would close the socket before the 503.
    asio::steady_timer deadline(stream.get_executor());
    deadline.expires_after(
        std::min<Clock::duration>(seconds(config.timeouts.header_s), kOverCapReadTime));
    auto header = co_await (http::async_read_header(stream, buffer, parser, kUseTuple) ||
                            deadline.async_wait(kUseTuple));
    if (header.index() == 1 || std::get<0>(std::get<0>(header))) co_return false;
    const auto route = match_route(parser.get().method_string(), parser.get().target());
    if (!route || (route->endpoint != Endpoint::health && route->endpoint != Endpoint::ready)) {
      co_return false;
    }
    Request request = parser.release();  // a probe's body, if any, is never read
    assign_request_id(request);
    request.keep_alive(false);  // the answer says Connection: close
    RequestRecord record;
    co_await handle(stream, buffer, request, record);
    log_request(request, record, client);
    co_return true;
  }

  // --- one connection --------------------------------------------------------------------------

  struct ConnectionCount {
    Impl& impl;
    explicit ConnectionCount(Impl& owner) : impl(owner) {
      impl.connections.fetch_add(1);
      impl.metrics.open_connections().add(1);
    }
    ~ConnectionCount() {
      impl.connections.fetch_sub(1);
      impl.metrics.open_connections().add(-1);
    }
  };

  // Generation and tokenizer requests move their connection to the streams context; everything
  // else (health, readiness, metrics, models, errors) is answered on the control context.
  static bool served_on_streams(const Request& request) {
    const auto route = match_route(request.method_string(), request.target());
    if (!route) return false;
    switch (route->endpoint) {
      case Endpoint::chat_completions:
      case Endpoint::completions:
      case Endpoint::tokenize:
      case Endpoint::detokenize:
        return true;
      default:
        return false;
    }
  }

  // Re-registers the connection with the streams context and continues it there, starting with
  // `request` (already counted in active_requests). False when the socket could not be moved.
  bool hand_over(beast::tcp_stream& stream, beast::flat_buffer& buffer, Request& request,
                 std::unique_ptr<ConnectionCount>& count) {
    boost::system::error_code ec;
    const auto protocol = stream.socket().local_endpoint(ec).protocol();
    if (ec) return false;
    const tcp::socket::native_handle_type fd = stream.socket().release(ec);
    if (ec) return false;
    tcp::socket moved(streams_io);
    if (moved.assign(protocol, fd, ec); ec) {
      ::close(fd);
      return true;  // the connection is lost either way; nothing is left to answer on
    }
    auto strand = asio::make_strand(streams_io);
    asio::co_spawn(strand,
                   session(std::move(moved), std::move(buffer),
                           std::make_unique<Request>(std::move(request)), std::move(count)),
                   asio::detached);
    return true;
  }

  // One connection's requests, in order. A session starts on the control context (`pending`
  // null) and reads requests there; the first generation request hands the connection over to
  // the streams context, where a new session continues with it as `pending`. So thousands of
  // streams and request bursts never queue in front of a /health probe.
  awaitable<void> session(tcp::socket socket, beast::flat_buffer buffer,
                          std::unique_ptr<Request> pending,
                          std::unique_ptr<ConnectionCount> count) {
    const bool on_control = pending == nullptr;
    if (on_control) {
      // Tokens go out as small writes; with Nagle's algorithm each waited for the client's
      // delayed ACK, about 40 ms on Linux, before the first token of every stream.
      boost::system::error_code no_delay_error;  // a socket that refuses still works
      socket.set_option(tcp::no_delay(true), no_delay_error);
    }
    const std::string client = peer_address(socket);
    beast::tcp_stream stream(std::move(socket));
    bool first = true;
    for (;;) {
      if (pending) {
        Request request = std::move(*pending);
        pending.reset();
        first = false;
        RequestRecord record;
        const bool keep_alive = co_await handle(stream, buffer, request, record);
        active_requests.fetch_sub(1);
        log_request(request, record, client);
        if (!keep_alive || draining.load()) break;
        continue;
      }
      // Idle keep-alive: wait for the next request's first byte.
      if (!first && buffer.size() == 0) {
        stream.expires_after(seconds(config.timeouts.idle_s));
        auto [ec, bytes] = co_await stream.async_read_some(buffer.prepare(4096), kUseTuple);
        if (ec) break;
        buffer.commit(bytes);
      }
      first = false;

      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(
          std::min<std::uint64_t>(config.limits.max_header_bytes, UINT32_MAX)));
      parser.body_limit(config.limits.max_body_bytes);

      // Header and body deadlines race a timer rather than using the stream's expiry, which
      // would close the socket before a 408 could be sent.
      asio::steady_timer deadline(stream.get_executor());
      deadline.expires_after(seconds(config.timeouts.header_s));
      auto header = co_await (http::async_read_header(stream, buffer, parser, kUseTuple) ||
                              deadline.async_wait(kUseTuple));
      if (header.index() == 1) {
        co_await reply_to_read_error(stream, beast::error::timeout, buffer.size() > 0);
        break;
      }
      if (const auto [header_ec, header_bytes] = std::get<0>(header); header_ec) {
        co_await reply_to_read_error(stream, header_ec, buffer.size() > 0 || header_bytes > 0);
        break;
      }
      RequestRecord record;
      const auto content_length = parser.content_length();
      if (content_length && *content_length > config.limits.max_body_bytes) {
        co_await finish_with_error(stream, parser.get(), record,
                                   openai::request_too_large(config.limits.max_body_bytes), false);
        break;
      }
      if (!parser.is_done()) {
        if (const auto expect = parser.get()[http::field::expect];
            beast::iequals(expect, "100-continue")) {
          http::response<http::empty_body> proceed{http::status::continue_, 11};
          stream.expires_after(seconds(config.timeouts.body_s));
          auto [write_ec, ignored] = co_await http::async_write(stream, proceed, kUseTuple);
          if (write_ec) break;
        }
        deadline.expires_after(seconds(config.timeouts.body_s));
        auto body = co_await (http::async_read(stream, buffer, parser, kUseTuple) ||
                              deadline.async_wait(kUseTuple));
        const boost::system::error_code body_ec =
            body.index() == 1 ? beast::error::timeout : std::get<0>(std::get<0>(body));
        if (body_ec) {
          if (body_ec == http::error::body_limit) {
            co_await finish_with_error(stream, parser.get(), record,
                                       openai::request_too_large(config.limits.max_body_bytes),
                                       false);
          } else {
            co_await reply_to_read_error(stream, body_ec, true);
          }
          break;
        }
      }
      stream.expires_never();

      Request request = parser.release();
      assign_request_id(request);
      active_requests.fetch_add(1);
      if (on_control && served_on_streams(request)) {
        if (hand_over(stream, buffer, request, count)) co_return;
      }
      const bool keep_alive = co_await handle(stream, buffer, request, record);
      active_requests.fetch_sub(1);
      log_request(request, record, client);
      if (!keep_alive || draining.load()) break;
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  // A request that could not be read: 408 for a timeout with part of it received, 431 for
  // oversized headers, 400 for a malformed one; a silent close when the client left.
  awaitable<void> reply_to_read_error(beast::tcp_stream& stream, boost::system::error_code ec,
                                      bool partial) {
    openai::ApiError error;
    if (ec == beast::error::timeout) {
      if (!partial) co_return;
      error = openai::request_timeout();
    } else if (ec == http::error::body_limit) {
      error = openai::request_too_large(config.limits.max_body_bytes);
    } else if (ec == http::error::header_limit) {
      error = openai::ApiError{431, "The request headers are too large", "invalid_request_error",
                               "", "request_header_fields_too_large"};
    } else if (ec == http::error::end_of_stream || ec == asio::error::eof ||
               ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      co_return;
    } else {
      error = openai::ApiError{400, fmt::format("Malformed HTTP request: {}", ec.message()),
                               "invalid_request_error", "", "bad_request"};
    }
    Request placeholder;
    placeholder.version(11);
    RequestRecord record;
    co_await finish_with_error(stream, placeholder, record, error, false);
  }

  // --- responses -------------------------------------------------------------------------------

  http::response<http::string_body> make_response(const Request& request, int status,
                                                  std::string body, std::string_view content_type,
                                                  bool keep_alive) {
    http::response<http::string_body> response{static_cast<http::status>(status),
                                               request.version() ? request.version() : 11};
    response.set(http::field::server, "tern");
    response.set(http::field::content_type, content_type);
    response.keep_alive(keep_alive && request.keep_alive() && !draining.load());
    if (const auto id = request[kRequestIdHeader]; !id.empty()) response.set(kRequestIdHeader, id);
    response.body() = std::move(body);
    response.prepare_payload();
    // HEAD: GET's headers, Content-Length included, and no body.
    if (request.method() == http::verb::head) response.body().clear();
    return response;
  }

  // Writes one complete response; false when the write failed.
  awaitable<bool> write_response(beast::tcp_stream& stream,
                                 http::response<http::string_body>& response) {
    stream.expires_after(seconds(config.timeouts.slow_client_s));
    auto [ec, bytes] = co_await http::async_write(stream, response, kUseTuple);
    stream.expires_never();
    co_return !ec;
  }

  awaitable<bool> respond_json(beast::tcp_stream& stream, const Request& request,
                               RequestRecord& record, int status, std::string body) {
    record.status = status;
    auto response = make_response(request, status, std::move(body), "application/json", true);
    const bool keep_alive = response.keep_alive();
    co_return co_await write_response(stream, response) && keep_alive;
  }

  awaitable<bool> finish_with_error(beast::tcp_stream& stream, const Request& request,
                                    RequestRecord& record, const openai::ApiError& error,
                                    bool keep_alive) {
    record.status = error.status;
    auto response = make_response(request, error.status, openai::encode_error(error),
                                  "application/json", keep_alive);
    if (error.retry_after_s > 0)
      response.set(http::field::retry_after, std::to_string(error.retry_after_s));
    const bool keep = response.keep_alive();
    co_return co_await write_response(stream, response) && keep;
  }

  // --- routing ---------------------------------------------------------------------------------

  awaitable<bool> handle(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                         const Request& request, RequestRecord& record) {
    auto route = match_route(request.method_string(), request.target());
    if (!route) co_return co_await finish_with_error(stream, request, record, route.error(), true);
    record.endpoint = route->endpoint;
    record.routed = true;
    if (keys.enabled() && (!route->operational || config.protect_operational_endpoints)) {
      const ApiKeys::Verdict verdict = keys.check(request[http::field::authorization]);
      if (verdict != ApiKeys::Verdict::allowed) {
        // A named local: GCC mishandles a ?: temporary that lives across a co_await.
        const openai::ApiError error = verdict == ApiKeys::Verdict::missing
                                           ? openai::missing_api_key()
                                           : openai::invalid_api_key();
        co_return co_await finish_with_error(stream, request, record, error, true);
      }
    }
    // Only JSON bodies: this also shuts the browser's cross-site form post out.
    if (request.method() == http::verb::post && !request.body().empty() &&
        !is_json_content_type(request[http::field::content_type])) {
      co_return co_await finish_with_error(
          stream, request, record,
          openai::unsupported_media_type(request[http::field::content_type]), true);
    }
    switch (route->endpoint) {
      case Endpoint::health:
        co_return co_await respond_json(stream, request, record, 200, R"({"status":"ok"})");
      case Endpoint::ready:
        if (draining.load()) {
          co_return co_await finish_with_error(
              stream, request, record, openai::service_unavailable("The server is draining"), true);
        }
        if (!models.ready()) {
          co_return co_await finish_with_error(
              stream, request, record, openai::service_unavailable("Models are still loading", 5),
              true);
        }
        co_return co_await respond_json(stream, request, record, 200, R"({"status":"ready"})");
      case Endpoint::metrics: {
        metrics.update_model_stats(models.stats(), models.unavailable());
        record.status = 200;
        auto response = make_response(request, 200, metrics.render(),
                                      "text/plain; version=0.0.4; charset=utf-8", true);
        const bool keep = response.keep_alive();
        co_return co_await write_response(stream, response) && keep;
      }
      case Endpoint::models:
        co_return co_await respond_json(
            stream, request, record, 200,
            openai::encode_model_list(models.models(), models.unavailable()));
      case Endpoint::model: {
        for (const ModelCard& card : models.models()) {
          if (card.id == route->path_parameter) {
            co_return co_await respond_json(stream, request, record, 200,
                                            openai::encode_model(card));
          }
        }
        co_return co_await finish_with_error(stream, request, record,
                                             openai::model_not_found(route->path_parameter), true);
      }
      case Endpoint::chat_completions:
        co_return co_await handle_chat(stream, buffer, request, record);
      case Endpoint::completions:
        co_return co_await handle_completion(stream, buffer, request, record);
      case Endpoint::tokenize: {
        auto parsed = openai::parse_tokenize_request(request.body());
        if (!parsed) {
          co_return co_await finish_with_error(stream, request, record, parsed.error(), true);
        }
        const bool with_strs = parsed->return_token_strs;
        auto result = co_await on_pool([&] { return models.tokenize(*parsed); });
        if (!*result)
          co_return co_await finish_with_error(stream, request, record, result->error(), true);
        co_return co_await respond_json(stream, request, record, 200,
                                        openai::encode_tokenize(result->value(), with_strs));
      }
      case Endpoint::detokenize: {
        auto parsed = openai::parse_detokenize_request(request.body());
        if (!parsed) {
          co_return co_await finish_with_error(stream, request, record, parsed.error(), true);
        }
        auto result = co_await on_pool([&] { return models.detokenize(*parsed); });
        if (!*result)
          co_return co_await finish_with_error(stream, request, record, result->error(), true);
        co_return co_await respond_json(stream, request, record, 200,
                                        openai::encode_detokenize(result->value()));
      }
    }
    co_return false;
  }

  // Runs `work` on the preparation pool and resumes on the connection's strand. The result
  // comes back wrapped in optional because co_spawn needs a default-constructible value.
  template <typename Work>
  awaitable<std::optional<std::invoke_result_t<Work&>>> on_pool(Work work) {
    using Result = std::optional<std::invoke_result_t<Work&>>;
    co_return co_await asio::co_spawn(
        pool.get_executor(), [&work]() -> awaitable<Result> { co_return Result(work()); },
        use_awaitable);
  }

  // Who asks, for the per-client share of a model's waiting queue: the API key when keys are
  // set (an address may front many users behind one proxy), else the peer's address.
  std::string client_of(beast::tcp_stream& stream, const Request& request) const {
    if (keys.enabled()) return std::string(request[http::field::authorization]);
    boost::system::error_code ec;
    const tcp::endpoint peer = stream.socket().remote_endpoint(ec);
    return ec ? std::string() : peer.address().to_string();
  }

  awaitable<bool> handle_chat(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                              const Request& request, RequestRecord& record) {
    auto parsed = openai::parse_chat_completion_request(request.body());
    if (!parsed)
      co_return co_await finish_with_error(stream, request, record, parsed.error(), true);
    parsed->client = client_of(stream, request);
    std::string model_id;
    auto started = co_await on_pool([&] { return models.start_chat(*parsed, model_id); });
    if (!*started) {
      co_return co_await finish_with_error(stream, request, record, started->error(), true);
    }
    record.model = model_id;
    const openai::ResponseMeta meta{openai::make_response_id("chatcmpl"), unix_now(), model_id};
    std::unique_ptr<GenerationStream> generation = std::move(started->value());
    if (parsed->stream) {
      openai::ChatChunkEncoder encoder(meta, parsed->include_usage, parsed->logprobs);
      co_return co_await stream_events(stream, buffer, request, record, *generation, encoder);
    }
    const bool with_logprobs = parsed->logprobs;
    co_return co_await collect_events(
        stream, buffer, request, record, *generation,
        [&](const std::vector<openai::ChoiceOutput>& choices, const Usage& usage) {
          return openai::encode_chat_completion(meta, choices, usage, with_logprobs);
        });
  }

  awaitable<bool> handle_completion(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                    const Request& request, RequestRecord& record) {
    auto parsed = openai::parse_completion_request(request.body());
    if (!parsed)
      co_return co_await finish_with_error(stream, request, record, parsed.error(), true);
    parsed->client = client_of(stream, request);
    std::string model_id;
    auto started = co_await on_pool([&] { return models.start_completion(*parsed, model_id); });
    if (!*started) {
      co_return co_await finish_with_error(stream, request, record, started->error(), true);
    }
    record.model = model_id;
    const openai::ResponseMeta meta{openai::make_response_id("cmpl"), unix_now(), model_id};
    std::unique_ptr<GenerationStream> generation = std::move(started->value());
    if (parsed->stream) {
      openai::CompletionChunkEncoder encoder(meta, parsed->include_usage, parsed->logprobs);
      co_return co_await stream_events(stream, buffer, request, record, *generation, encoder);
    }
    const std::optional<int> logprobs = parsed->logprobs;
    co_return co_await collect_events(
        stream, buffer, request, record, *generation,
        [&](const std::vector<openai::ChoiceOutput>& choices, const Usage& usage) {
          return openai::encode_text_completion(meta, choices, usage, logprobs);
        });
  }

  // --- generation ------------------------------------------------------------------------------

  // What the pump, the writer and the disconnect watcher of one request share. All three run on
  // the connection's strand, so plain fields suffice.
  struct Generation {
    Generation(GenerationStream& source_in, const asio::any_io_executor& executor,
               const ServerConfig& config, ServiceMetrics& metrics,
               ServiceMetrics::ModelHistograms histograms_in, Clock::time_point start_in)
        : source(source_in),
          waker(std::make_shared<StreamWaker>(executor)),
          writer_signal(executor, Clock::time_point::max()),
          buffer(config.limits.stream_buffer_bytes, seconds(config.timeouts.slow_client_s)),
          buffered_bytes(metrics.stream_buffered_bytes()),
          buffer_peak_bytes(metrics.stream_buffer_peak_bytes()),
          histograms(histograms_in),
          start(start_in) {}
    ~Generation() { buffered_bytes.add(-static_cast<double>(reported_bytes)); }
    Generation(const Generation&) = delete;
    Generation& operator=(const Generation&) = delete;

    // The drain timeout ran out: the pump ends the stream with an error event.
    void cut_now() {
      cut = true;
      waker->timer.cancel();
      writer_signal.cancel();
    }

    // Publishes the buffer's pending bytes and peak to /metrics; after each change to it.
    void account_buffer() {
      const std::size_t pending = buffer.pending_bytes();
      buffered_bytes.add(static_cast<double>(pending) - static_cast<double>(reported_bytes));
      reported_bytes = pending;
      if (buffer.peak_bytes() > reported_peak_bytes) {
        reported_peak_bytes = buffer.peak_bytes();
        buffer_peak_bytes.raise_to(static_cast<double>(reported_peak_bytes));
      }
    }

    // Token timing for the latency histograms.
    void saw_tokens(Clock::time_point now) {
      if (!first_token_at) {
        first_token_at = now;
        histograms.time_to_first_token.observe(std::chrono::duration<double>(now - start).count());
      } else {
        histograms.inter_token_latency.observe(
            std::chrono::duration<double>(now - last_token_at).count());
      }
      last_token_at = now;
    }

    GenerationStream& source;
    std::shared_ptr<StreamWaker> waker;
    asio::steady_timer writer_signal;
    SseBuffer buffer;
    Gauge& buffered_bytes;
    Gauge& buffer_peak_bytes;
    std::size_t reported_bytes = 0;  // of buffer.pending_bytes(), in buffered_bytes
    std::size_t reported_peak_bytes = 0;
    ServiceMetrics::ModelHistograms histograms;
    Clock::time_point start;
    std::optional<Clock::time_point> first_token_at;
    Clock::time_point last_token_at;
    bool finished = false;  // done or error delivered
    bool dropped = false;   // slow client
    bool cut = false;       // by the drain timeout
    // The pump waits for the writer to take bytes from a full buffer.
    bool waiting_for_room = false;
    bool client_gone = false;
    bool write_failed = false;
    std::optional<openai::ApiError> error;
    Usage usage;
  };

  // Drains the stream's events through `on_event` until it reports finished. In a stream it
  // then idles until the writer is done; it returns early only to drop a slow client. It takes
  // no event while the buffer is full: the engine's channel then fills up and the engine pauses
  // (or cancels, by its SlowConsumerPolicy) the request, so a stream holds at most
  // stream_buffer_bytes plus one event.
  template <typename OnEvent>
  awaitable<void> pump(Generation& generation, OnEvent on_event, bool streaming) {
    for (;;) {
      bool any = false;
      while (!generation.finished && !generation.cut && !generation.buffer.full()) {
        std::optional<GenerationEvent> event = generation.source.try_next();
        if (!event) break;
        any = true;
        on_event(*event);
      }
      if (generation.cut && !generation.finished) {
        GenerationEvent shutdown;
        shutdown.kind = GenerationEvent::Kind::error;
        shutdown.error = openai::service_unavailable(
            "The server is shutting down: its drain timeout ended this request");
        on_event(shutdown);
        generation.source.cancel();
        any = true;
      }
      const auto now = Clock::now();
      if (any) {
        generation.buffer.appended(now);
        generation.account_buffer();
        generation.writer_signal.cancel();
      }
      if (generation.finished) {
        if (!streaming) co_return;
        generation.waker->timer.expires_at(Clock::time_point::max());
        co_await generation.waker->timer.async_wait(kUseTuple);
        if (cancelled(co_await asio::this_coro::cancellation_state)) co_return;
        continue;
      }
      if (generation.buffer.should_drop(now)) {
        generation.dropped = true;
        co_return;
      }
      if (generation.buffer.full()) {
        generation.waiting_for_room = true;
        generation.waker->timer.expires_at(
            generation.buffer.drop_deadline().value_or(Clock::time_point::max()));
        co_await generation.waker->timer.async_wait(kUseTuple);
        generation.waiting_for_room = false;
        if (cancelled(co_await asio::this_coro::cancellation_state)) co_return;
        continue;
      }
      if (!generation.waker->arm(generation.source)) continue;
      generation.waker->timer.expires_at(
          generation.buffer.drop_deadline().value_or(Clock::time_point::max()));
      co_await generation.waker->timer.async_wait(kUseTuple);
      if (cancelled(co_await asio::this_coro::cancellation_state)) co_return;
    }
  }

  // Sends what the pump queued, as HTTP chunks; a comment line keeps an idle stream (a long
  // prefill) alive. Returns when everything up to [DONE] is out, or when a write fails.
  awaitable<void> write_events(beast::tcp_stream& stream, Generation& generation, bool chunked) {
    auto last_write = Clock::now();
    const auto keepalive = seconds(config.timeouts.sse_keepalive_s);
    for (;;) {
      if (!generation.buffer.empty()) {
        const std::string bytes = generation.buffer.take_for_write();
        stream.expires_after(seconds(config.timeouts.slow_client_s));
        boost::system::error_code ec;
        if (chunked) {
          std::tie(ec, std::ignore) =
              co_await asio::async_write(stream, http::make_chunk(asio::buffer(bytes)), kUseTuple);
        } else {
          std::tie(ec, std::ignore) =
              co_await asio::async_write(stream, asio::buffer(bytes), kUseTuple);
        }
        stream.expires_never();
        if (ec) {
          generation.write_failed = true;
          if (ec == beast::error::timeout) generation.dropped = true;  // for slow_client_s
          co_return;
        }
        last_write = Clock::now();
        generation.buffer.written(bytes.size(), last_write);
        generation.account_buffer();
        if (generation.waiting_for_room) generation.waker->timer.cancel();
        continue;
      }
      if (generation.finished) {
        if (chunked) {
          stream.expires_after(seconds(config.timeouts.slow_client_s));
          auto [ec, ignored] =
              co_await asio::async_write(stream, http::make_chunk_last(), kUseTuple);
          stream.expires_never();
          if (ec) generation.write_failed = true;
          if (ec == beast::error::timeout) generation.dropped = true;
        }
        co_return;
      }
      generation.writer_signal.expires_at(last_write + keepalive);
      auto [ec] = co_await generation.writer_signal.async_wait(kUseTuple);
      if (cancelled(co_await asio::this_coro::cancellation_state)) co_return;
      if (!ec) {
        append_sse_comment(generation.buffer.queue(), "keepalive");
        generation.buffer.appended(Clock::now());
        generation.account_buffer();
      }
    }
  }

  // Notices a client that hangs up while its request runs. Bytes it sends meanwhile (a
  // pipelined request) are kept for the next read.
  awaitable<void> watch_disconnect(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                   Generation& generation) {
    for (;;) {
      if (buffer.size() > config.limits.max_header_bytes + config.limits.max_body_bytes) {
        generation.client_gone = true;  // far ahead of us: not a well-behaved client
        co_return;
      }
      auto [ec, bytes] = co_await stream.socket().async_read_some(buffer.prepare(4096), kUseTuple);
      if (cancelled(co_await asio::this_coro::cancellation_state)) co_return;
      if (ec) {
        generation.client_gone = true;
        co_return;
      }
      buffer.commit(bytes);
    }
  }

  void finish_generation(Generation& generation, RequestRecord& record) {
    generation.waker->release(generation.source);
    const bool completed = generation.finished && !generation.error && !generation.dropped &&
                           !generation.client_gone && !generation.write_failed;
    if (!completed && !generation.finished) generation.source.cancel();
    if (generation.dropped) {
      spdlog::warn("dropped a slow client: {} bytes still pending after slow_client_s ({} s)",
                   generation.buffer.pending_bytes(), config.timeouts.slow_client_s);
      record.reason = "slow_client";
    } else if (generation.cut) {
      record.reason = "drain_timeout";
    }
    if (!record.reason.empty()) metrics.count_dropped_stream(record.model, record.reason);
    if (generation.client_gone || generation.dropped) record.status = 499;
    record.usage = generation.usage;
    if (generation.finished && !generation.error) {
      generation.histograms.prompt_tokens.observe(generation.usage.prompt_tokens);
      generation.histograms.generation_tokens.observe(generation.usage.completion_tokens);
    }
    generation.histograms.end_to_end_latency.observe(
        std::chrono::duration<double>(Clock::now() - record.start).count());
  }

  template <typename Encoder>
  awaitable<bool> stream_events(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                const Request& request, RequestRecord& record,
                                GenerationStream& source, Encoder& encoder) {
    const bool chunked = request.version() >= 11;
    http::response<http::empty_body> response{http::status::ok, request.version()};
    response.set(http::field::server, "tern");
    response.set(http::field::content_type, "text/event-stream");
    response.set(http::field::cache_control, "no-cache");
    response.set("X-Accel-Buffering", "no");
    response.set(kRequestIdHeader, request[kRequestIdHeader]);
    response.keep_alive(chunked && request.keep_alive() && !draining.load());
    if (chunked) response.chunked(true);
    const bool keep_alive = response.keep_alive();
    record.status = 200;
    http::response_serializer<http::empty_body> serializer{response};
    stream.expires_after(seconds(config.timeouts.slow_client_s));
    auto [header_ec, header_bytes] =
        co_await http::async_write_header(stream, serializer, kUseTuple);
    stream.expires_never();

    const auto executor = co_await asio::this_coro::executor;
    Generation generation(source, executor, config, metrics, metrics.histograms(record.model),
                          record.start);
    const OpenGeneration listed(*this, generation);
    if (header_ec) {
      generation.write_failed = true;
      finish_generation(generation, record);
      co_return false;
    }
    auto on_event = [&](GenerationEvent& event) {
      std::string& out = generation.buffer.queue();
      switch (event.kind) {
        case GenerationEvent::Kind::delta:
          generation.saw_tokens(Clock::now());
          encoder.delta(out, event.index, event.text, event.logprobs);
          break;
        case GenerationEvent::Kind::finish:
          if (!event.text.empty() || !event.logprobs.empty()) {
            generation.saw_tokens(Clock::now());
            encoder.delta(out, event.index, event.text, event.logprobs);
          }
          encoder.finish(out, event.index, event.finish_reason);
          break;
        case GenerationEvent::Kind::done:
          generation.usage = event.usage;
          encoder.done(out, event.usage);
          generation.finished = true;
          break;
        case GenerationEvent::Kind::error:
          // Headers are out; the error travels as an event, as vLLM sends it.
          append_sse_data(out, openai::encode_error(event.error));
          out += kSseDone;
          generation.error = event.error;
          generation.finished = true;
          break;
      }
    };
    co_await (write_events(stream, generation, chunked) || pump(generation, on_event, true) ||
              watch_disconnect(stream, buffer, generation));
    finish_generation(generation, record);
    const bool clean = generation.finished && !generation.dropped && !generation.client_gone &&
                       !generation.write_failed;
    co_return clean&& keep_alive;
  }

  template <typename Encode>
  awaitable<bool> collect_events(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                 const Request& request, RequestRecord& record,
                                 GenerationStream& source, Encode encode) {
    const auto executor = co_await asio::this_coro::executor;
    Generation generation(source, executor, config, metrics, metrics.histograms(record.model),
                          record.start);
    const OpenGeneration listed(*this, generation);
    std::vector<openai::ChoiceOutput> choices;
    auto choice = [&](int index) -> openai::ChoiceOutput& {
      const std::size_t slot = index < 0 ? 0 : static_cast<std::size_t>(index);
      if (choices.size() <= slot) choices.resize(slot + 1);
      return choices[slot];
    };
    auto on_event = [&](GenerationEvent& event) {
      switch (event.kind) {
        case GenerationEvent::Kind::delta:
        case GenerationEvent::Kind::finish: {
          if (!event.text.empty()) generation.saw_tokens(Clock::now());
          openai::ChoiceOutput& output = choice(event.index);
          if (output.logprobs.empty() && !event.logprobs.empty()) {
            output.logprobs_text_offset = output.text.size();
          }
          output.text += event.text;
          for (TokenLogprob& token : event.logprobs) output.logprobs.push_back(std::move(token));
          if (event.kind == GenerationEvent::Kind::finish) {
            output.finish_reason = event.finish_reason;
          }
          break;
        }
        case GenerationEvent::Kind::done:
          generation.usage = event.usage;
          generation.finished = true;
          break;
        case GenerationEvent::Kind::error:
          generation.error = event.error;
          generation.finished = true;
          break;
      }
    };
    co_await (pump(generation, on_event, false) || watch_disconnect(stream, buffer, generation));
    finish_generation(generation, record);
    if (generation.client_gone || !generation.finished) co_return false;
    if (generation.error) {
      co_return co_await finish_with_error(stream, request, record, *generation.error, true);
    }
    co_return co_await respond_json(stream, request, record, 200,
                                    encode(choices, generation.usage));
  }

  // --- drain timeout -------------------------------------------------------------------------

  // Lists a generation in open_generations for as long as it lives. One that starts after the
  // drain timeout (its request was still being prepared) is cut from the start.
  struct OpenGeneration {
    OpenGeneration(Impl& owner, Generation& listed) : impl(owner), generation(listed) {
      const std::lock_guard lock(impl.generations_mutex);
      impl.open_generations.insert(&generation);
      if (impl.drain_timed_out.load()) generation.cut = true;
    }
    ~OpenGeneration() {
      const std::lock_guard lock(impl.generations_mutex);
      impl.open_generations.erase(&generation);
    }
    OpenGeneration(const OpenGeneration&) = delete;
    OpenGeneration& operator=(const OpenGeneration&) = delete;
    Impl& impl;
    Generation& generation;
  };

  // Cuts every open generation on its own strand; returns how many there were. A generation
  // still listed when its strand runs the cut is alive: it unlists itself on that strand.
  std::size_t cut_open_generations() {
    const std::lock_guard lock(generations_mutex);
    for (Generation* generation : open_generations) {
      asio::post(generation->writer_signal.get_executor(), [this, generation] {
        const std::lock_guard strand_lock(generations_mutex);
        if (open_generations.contains(generation)) generation->cut_now();
      });
    }
    return open_generations.size();
  }

  // --- accounting ------------------------------------------------------------------------------

  void log_request(const Request& request, const RequestRecord& record, std::string_view client) {
    const std::string_view endpoint = record.routed ? endpoint_label(record.endpoint) : "other";
    metrics.count_request(record.model, endpoint, record.status);
    const double ms =
        std::chrono::duration<double, std::milli>(Clock::now() - record.start).count();
    const bool operational = record.routed && (record.endpoint == Endpoint::health ||
                                               record.endpoint == Endpoint::ready ||
                                               record.endpoint == Endpoint::metrics);
    const auto level =
        operational && record.status < 400 ? spdlog::level::debug : spdlog::level::info;
    spdlog::log(level,
                "{} {} {} {} request_id={} model={} prompt_tokens={} completion_tokens={} "
                "{:.1f}ms{}{}",
                client, std::string_view(request.method_string()),
                std::string_view(request.target()), record.status,
                std::string_view(request[kRequestIdHeader]),
                record.model.empty() ? "-" : record.model, record.usage.prompt_tokens,
                record.usage.completion_tokens, ms, record.reason.empty() ? "" : " reason=",
                record.reason);
  }

  const ServerConfig config;
  ModelService& models;
  ServiceMetrics& metrics;
  const Options options;
  const ApiKeys keys;
  // Before the event loops: destroying them destroys suspended requests, which unlist theirs.
  std::mutex generations_mutex;
  std::set<Generation*> open_generations;  // under generations_mutex
  // Two event loops: `io` (one thread) accepts, reads requests and answers the operational
  // endpoints; `streams_io` (io_threads threads) carries generation requests and their streams.
  asio::io_context io;
  asio::io_context streams_io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> streams_work;
  tcp::acceptor acceptor;
  asio::signal_set signals;
  asio::thread_pool pool;
  int bound_port = 0;
  std::atomic<bool> draining{false};
  std::atomic<std::size_t> connections{0};
  std::atomic<std::size_t> active_requests{0};
  std::size_t over_cap_reads = 0;  // control thread only
  std::atomic<bool> drain_timed_out{false};
};

Server::Server(const ServerConfig& config, ModelService& models, ServiceMetrics& metrics,
               Options options)
    : impl_(std::make_unique<Impl>(config, models, metrics, options)) {}

Server::~Server() = default;

Status Server::start() {
  return impl_->start();
}
int Server::port() const {
  return impl_->bound_port;
}
void Server::run() {
  impl_->run();
}

void Server::drain() {
  asio::post(impl_->io, [impl = impl_.get()] { impl->begin_drain(); });
}

void Server::stop() {
  impl_->stop_both();
}
bool Server::draining() const {
  return impl_->draining.load();
}
bool Server::drain_timed_out() const {
  return impl_->drain_timed_out.load();
}
std::size_t Server::open_connections() const {
  return impl_->connections.load();
}

}  // namespace tern::service
