#include "service/server.h"

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include "kernels/this_thread.h"
#include "service/host_address.h"
#include "service/http_session.h"
#include "service/server_hand_over.h"
#include "service/stream_writer.h"

namespace tern::service {
namespace detail {
namespace {

using namespace asio::experimental::awaitable_operators;

// After the drain timeout cut the open streams, how long their error events may take to go out.
constexpr auto kCutGrace = std::chrono::seconds(2);

// Over the connection cap, how many connections at once are read to find a probe among them,
// and for how long each: a bound on what a flood of idle connections can hold.
constexpr std::size_t kMaxOverCapReads = 256;
constexpr auto kOverCapReadTime = std::chrono::seconds(1);

// True when `signal_number` is ignored, as nohup leaves SIGHUP.
bool signal_ignored(int signal_number) {
  struct sigaction current {};
  return sigaction(signal_number, nullptr, &current) == 0 && current.sa_handler == SIG_IGN;
}

}  // namespace

ServerCore::ServerCore(const ServerConfig& config_in, ModelService& models_in,
                       ServiceMetrics& metrics_in, Server::Options options_in)
    : config(config_in),
      models(models_in),
      metrics(metrics_in),
      options(options_in),
      keys(config_in.api_keys),
      responses(responses::ResponseStoreLimits{
          static_cast<std::size_t>(config_in.responses_store.max_responses),
          static_cast<std::size_t>(config_in.responses_store.max_bytes),
          config_in.responses_store.max_share_per_key, config_in.responses_store.ttl_s}),
      io(1),
      streams_io(config_in.io_threads),
      streams_work(asio::make_work_guard(streams_io)),
      acceptor(io),
      signals(io),
      preparation(static_cast<std::size_t>(std::max(1, options_in.preparation_threads))) {}

ServerCore::~ServerCore() {
  preparation.stop();
}

ConnectionCount::ConnectionCount(ServerCore& core) : core_(core) {
  core_.connections.fetch_add(1);
  core_.metrics.open_connections().add(1);
}

ConnectionCount::~ConnectionCount() {
  core_.connections.fetch_sub(1);
  core_.metrics.open_connections().add(-1);
}

bool hand_over(ServerCore& core, beast::tcp_stream& stream, beast::flat_buffer& buffer,
               Request& request, std::unique_ptr<ConnectionCount>& count) {
  boost::system::error_code ec;
  const auto protocol = stream.socket().local_endpoint(ec).protocol();
  if (ec) return false;
  const tcp::socket::native_handle_type fd = stream.socket().release(ec);
  if (ec) return false;
  tcp::socket moved(core.streams_io);
  if (moved.assign(protocol, fd, ec); ec) {
    ::close(fd);
    return true;  // the connection is lost either way; nothing is left to answer on
  }
  auto strand = asio::make_strand(core.streams_io);
  asio::co_spawn(strand,
                 continue_on_streams(core, std::move(moved), std::move(buffer), std::move(request),
                                     std::move(count)),
                 asio::detached);
  return true;
}

}  // namespace detail

using namespace detail;
using namespace asio::experimental::awaitable_operators;

// The server's life: start, signals, the two event loops, drain; and accepting connections.
struct Server::Impl : ServerCore {
  using ServerCore::ServerCore;

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
      const std::size_t cut = cut_open_generations(*this);
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
      asio::co_spawn(
          connection.get_executor(),
          run_session(*this, std::move(connection), std::make_unique<ConnectionCount>(*this)),
          asio::detached);
    }
  }

  // Over the connection cap: a short 503 and close, so clients back off instead of hanging. A
  // /health or /ready probe is answered instead, so a connection flood cannot fail it.
  awaitable<void> reject(tcp::socket socket) {
    static const std::string kResponse = [] {
      const std::string body =
          api::encode_error(api::service_unavailable("The server is at its connection limit", 1));
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
    if (!route || !route->route->probe) {
      co_return false;
    }
    Request request = parser.release();  // a probe's body, if any, is never read
    assign_request_id(request);
    request.keep_alive(false);  // the answer says Connection: close
    RequestRecord record;
    co_await answer(*this, stream, buffer, request, record);
    log_request(*this, request, record, client);
    co_return true;
  }
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
