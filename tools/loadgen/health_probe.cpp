#include "tools/loadgen/health_probe.h"

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "tools/loadgen/latency_stats.h"

namespace tern::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {
constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);
constexpr auto kProbeTimeout = std::chrono::seconds(10);
}  // namespace

struct HealthProbe::Impl {
  std::string host;
  std::string port;
  std::chrono::milliseconds interval;
  asio::io_context io{1};
  asio::steady_timer tick{io};
  bool stopping = false;  // touched on the probe's thread only
  std::vector<double> latencies_ms;
  std::vector<double> sent_at_s;  // of each answered probe, from the first one
  int failures = 0;
  std::thread thread;

  asio::awaitable<void> loop() {
    std::optional<beast::tcp_stream> stream;
    beast::flat_buffer buffer;
    tcp::resolver resolver(io);
    auto next = Clock::now();
    const auto first = next;
    while (!stopping) {
      const auto started = Clock::now();
      bool ok = false;
      if (!stream) {
        auto [resolve_ec, endpoints] = co_await resolver.async_resolve(host, port, kUseTuple);
        if (!resolve_ec) {
          stream.emplace(io);
          stream->expires_after(kProbeTimeout);
          auto [ec, endpoint] = co_await stream->async_connect(endpoints, kUseTuple);
          if (ec) stream.reset();
        }
      }
      if (stream) {
        http::request<http::empty_body> request{http::verb::get, "/health", 11};
        request.set(http::field::host, host);
        stream->expires_after(kProbeTimeout);
        auto [write_ec, written] = co_await http::async_write(*stream, request, kUseTuple);
        http::response<http::string_body> response;
        boost::system::error_code read_ec = write_ec;
        if (!write_ec) {
          std::tie(read_ec, std::ignore) =
              co_await http::async_read(*stream, buffer, response, kUseTuple);
        }
        ok = !read_ec && response.result_int() == 200;
        if (read_ec || !response.keep_alive()) {
          stream.reset();
          buffer.clear();
        }
      }
      if (ok) {
        latencies_ms.push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - started).count());
        sent_at_s.push_back(std::chrono::duration<double>(started - first).count());
      } else {
        ++failures;
      }
      next += interval;
      if (next < Clock::now()) next = Clock::now();
      tick.expires_at(next);
      co_await tick.async_wait(kUseTuple);
    }
  }
};

HealthProbe::HealthProbe(std::string host, std::string port, int interval_ms)
    : impl_(std::make_unique<Impl>()) {
  impl_->host = std::move(host);
  impl_->port = std::move(port);
  impl_->interval = std::chrono::milliseconds(interval_ms);
}

HealthProbe::~HealthProbe() {
  stop();
}

void HealthProbe::start() {
  asio::co_spawn(impl_->io, impl_->loop(), asio::detached);
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

void HealthProbe::stop() {
  if (!impl_->thread.joinable()) return;
  asio::post(impl_->io, [this] {
    impl_->stopping = true;
    impl_->tick.cancel();
  });
  impl_->thread.join();
}

HealthStats HealthProbe::stats() const {
  std::vector<double> latencies = impl_->latencies_ms;
  const Percentiles p = percentiles(latencies);
  HealthStats stats;
  stats.probes = p.count;
  stats.failures = impl_->failures;
  stats.p50_ms = p.p50;
  stats.p99_ms = p.p99;
  stats.max_ms = p.max;
  const auto& all = impl_->latencies_ms;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i] > 50.0) {
      ++stats.over_50ms;
      stats.slow.emplace_back(impl_->sent_at_s[i], all[i]);
    }
    if (all[i] == p.max) stats.max_at_s = impl_->sent_at_s[i];
  }
  return stats;
}

}  // namespace tern::loadgen
