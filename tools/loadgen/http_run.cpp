#include "tools/loadgen/http_run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <simdjson.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "tools/loadgen/health_probe.h"
#include "tools/loadgen/request_body.h"
#include "tools/loadgen/rss_sampler.h"
#include "tools/loadgen/sse_events.h"
#include "tools/loadgen/stream_chunk.h"

namespace tern::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using asio::awaitable;

namespace {

constexpr auto kUseTuple = asio::as_tuple(asio::use_awaitable);

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// What every client coroutine shares; all of it is touched on the one event-loop thread,
// except open_streams, which the RSS sampler reads.
struct Shared {
  const Options& options;
  std::string model;
  std::string target;
  std::string host_header;
  std::string authorization;
  tcp::resolver::results_type endpoints;
  int requests = 0;
  int clients = 0;
  int next_request = 0;
  std::vector<RequestResult>& results;
  std::atomic<int> open_streams{0};
  int peak_open_streams = 0;
  // --hold: clients wait here until every one has connected.
  int arrived = 0;
  asio::steady_timer barrier;
  // The first error body of each kind, shown once on stderr.
  std::map<std::string, std::string> first_error;

  Shared(const Options& opts, asio::io_context& io, std::vector<RequestResult>& out)
      : options(opts), results(out), barrier(io, Clock::time_point::max()) {}

  void stream_opened() {
    peak_open_streams = std::max(peak_open_streams, open_streams.fetch_add(1) + 1);
  }
  void stream_closed() { open_streams.fetch_sub(1); }

  void note_error(const std::string& kind, std::string detail) {
    first_error.try_emplace(kind, std::move(detail));
  }
};

std::string read_error_kind(const boost::system::error_code& ec) {
  if (ec == beast::error::timeout) return "timeout";
  if (ec == http::error::end_of_stream || ec == asio::error::eof) return "no_done";
  return "reset";
}

// Reads one streamed response: status, then SSE events as they arrive. Returns false when the
// connection cannot be reused.
awaitable<bool> read_stream(Shared& shared, beast::tcp_stream& stream, beast::flat_buffer& buffer,
                            RequestResult& result, Clock::time_point sent,
                            Clock::time_point deadline) {
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  stream.expires_at(deadline);
  auto [header_ec, header_bytes] =
      co_await http::async_read_header(stream, buffer, parser, kUseTuple);
  if (header_ec) {
    result.error = header_ec == beast::error::timeout ? "timeout" : "reset";
    shared.note_error(result.error, header_ec.message());
    co_return false;
  }
  const unsigned status = parser.get().result_int();
  SseEvents events;
  std::string error_body;
  std::string data;
  bool done = false;
  bool usage = false;
  bool stream_error = false;
  std::optional<Clock::time_point> last_content;
  char body[4096];
  while (!parser.is_done()) {
    parser.get().body().data = body;
    parser.get().body().size = sizeof body;
    stream.expires_at(deadline);
    auto [ec, bytes] = co_await http::async_read_some(stream, buffer, parser, kUseTuple);
    if (ec == http::error::need_buffer) ec = {};
    const std::size_t got = sizeof body - parser.get().body().size;
    const auto now = Clock::now();
    if (status != 200) {
      error_body.append(body, got);
    } else if (got > 0) {
      events.append(std::string_view(body, got));
      while (events.next(data)) {
        if (data == "[DONE]") {
          done = true;
          result.e2e_ms = ms_between(sent, now);
          continue;
        }
        const StreamChunk chunk = parse_stream_chunk(data);
        if (chunk.error) {
          stream_error = true;
          shared.note_error("stream_error", data);
        }
        if (chunk.usage) {
          usage = true;
          result.completion_tokens = chunk.completion_tokens;
          result.prompt_tokens = chunk.prompt_tokens;
        }
        if (chunk.content) {
          if (last_content) {
            result.itl_ms.push_back(ms_between(*last_content, now));
          } else {
            result.ttft_ms = ms_between(sent, now);
          }
          last_content = now;
        }
      }
    }
    if (ec) {
      if (status != 200) break;  // the status is what counts
      result.error = read_error_kind(ec);
      shared.note_error(result.error, ec.message());
      co_return false;
    }
  }
  if (status != 200) {
    result.error = fmt::format("http_{}", status);
    shared.note_error(result.error, error_body);
  } else if (stream_error) {
    result.error = "stream_error";
  } else if (!done) {
    result.error = "no_done";
    shared.note_error(result.error, "the response ended without data: [DONE]");
  } else if (!usage) {
    result.error = "no_usage";
    shared.note_error(result.error, "no chunk carried usage");
  }
  if (result.error.empty() == false && result.e2e_ms == 0) {
    result.e2e_ms = ms_between(sent, Clock::now());
  }
  co_return parser.is_done() && parser.keep_alive();
}

// One client: its own connection, requests back to back until none are left.
awaitable<void> client(Shared& shared) {
  const auto executor = co_await asio::this_coro::executor;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(shared.options.timeout_s));
  std::optional<beast::tcp_stream> stream;
  beast::flat_buffer buffer;
  auto connect = [&](Clock::time_point deadline) -> awaitable<boost::system::error_code> {
    stream.emplace(executor);
    buffer.clear();
    stream->expires_at(deadline);
    auto [ec, endpoint] = co_await stream->async_connect(shared.endpoints, kUseTuple);
    if (ec) {
      stream.reset();
    } else {
      stream->socket().set_option(tcp::no_delay(true));
    }
    co_return ec;
  };

  if (shared.options.hold) {
    co_await connect(Clock::now() + timeout);  // a failure is retried with the first request
    if (++shared.arrived == shared.clients) {
      shared.barrier.cancel();
    } else {
      co_await shared.barrier.async_wait(kUseTuple);
    }
  }

  while (shared.next_request < shared.requests) {
    const int index = shared.next_request++;
    RequestResult& result = shared.results[static_cast<std::size_t>(index)];
    const auto sent = Clock::now();
    const auto deadline = sent + timeout;
    if (!stream) {
      if (auto ec = co_await connect(deadline)) {
        result.error = ec == beast::error::timeout ? "timeout" : "connect";
        shared.note_error(result.error, ec.message());
        result.e2e_ms = ms_between(sent, Clock::now());
        continue;
      }
    }
    http::request<http::string_body> request{http::verb::post, shared.target, 11};
    request.set(http::field::host, shared.host_header);
    request.set(http::field::content_type, "application/json");
    request.set(http::field::accept, "text/event-stream");
    if (!shared.authorization.empty()) {
      request.set(http::field::authorization, shared.authorization);
    }
    request.keep_alive(true);
    request.body() = request_body(shared.options, shared.model, index);
    request.prepare_payload();
    stream->expires_at(deadline);
    auto [write_ec, written] = co_await http::async_write(*stream, request, kUseTuple);
    if (write_ec) {
      result.error = write_ec == beast::error::timeout ? "timeout" : "reset";
      shared.note_error(result.error, write_ec.message());
      result.e2e_ms = ms_between(sent, Clock::now());
      stream.reset();
      continue;
    }
    shared.stream_opened();
    const bool reusable = co_await read_stream(shared, *stream, buffer, result, sent, deadline);
    shared.stream_closed();
    if (!reusable) stream.reset();
  }
}

}  // namespace

Expected<std::string> fetch_default_model(const Options& options) {
  asio::io_context io(1);
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(options.host, options.port, ec);
  if (ec) return Error{fmt::format("cannot resolve {}: {}", options.host, ec.message())};
  beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(30));
  stream.connect(endpoints, ec);
  if (ec) return Error{fmt::format("cannot connect to {}: {}", options.url, ec.message())};
  http::request<http::empty_body> request{http::verb::get, "/v1/models", 11};
  request.set(http::field::host, options.host + ":" + options.port);
  if (!options.api_key.empty())
    request.set(http::field::authorization, "Bearer " + options.api_key);
  http::write(stream, request, ec);
  http::response<http::string_body> response;
  beast::flat_buffer buffer;
  if (!ec) http::read(stream, buffer, response, ec);
  if (ec) return Error{fmt::format("GET {}/v1/models failed: {}", options.url, ec.message())};
  if (response.result_int() != 200) {
    return Error{fmt::format("GET {}/v1/models answered {}: {}", options.url, response.result_int(),
                             response.body())};
  }
  simdjson::dom::parser parser;
  std::string_view id;
  if (parser.parse(response.body())["data"].at(0)["id"].get_string().get(id) != simdjson::SUCCESS) {
    return Error{fmt::format("GET {}/v1/models lists no model: {}", options.url, response.body())};
  }
  return std::string(id);
}

RunResult run_http(const Options& options, int concurrency, int requests,
                   const std::string& model) {
  RunResult run;
  run.mode = "http";
  run.model = model;
  run.concurrency = concurrency;
  run.requests = requests;
  run.results.resize(static_cast<std::size_t>(requests));

  asio::io_context io(1);
  Shared shared(options, io, run.results);
  shared.model = model;
  shared.target = options.endpoint == Endpoint::chat ? "/v1/chat/completions" : "/v1/completions";
  shared.host_header = options.host + ":" + options.port;
  if (!options.api_key.empty()) shared.authorization = "Bearer " + options.api_key;
  shared.requests = requests;
  shared.clients = std::min(concurrency, requests);
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  shared.endpoints = resolver.resolve(options.host, options.port, ec);

  std::optional<RssSampler> rss;
  if (options.server_pid > 0) rss.emplace(options.server_pid);
  std::optional<HealthProbe> probe;
  if (options.probe_health_ms > 0) {
    probe.emplace(options.host, options.port, options.probe_health_ms);
    probe->start();
  }
  if (rss) rss->start();

  const auto start = Clock::now();
  if (ec) {
    for (RequestResult& result : run.results) result.error = "connect";
    shared.note_error("connect", fmt::format("cannot resolve {}: {}", options.host, ec.message()));
  } else {
    for (int i = 0; i < shared.clients; ++i) asio::co_spawn(io, client(shared), asio::detached);
    io.run();
  }
  run.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  run.peak_open_streams = shared.peak_open_streams;
  if (probe) {
    probe->stop();
    run.health = probe->stats();
  }
  if (rss) {
    rss->stop();
    run.rss = rss->stats(run.peak_open_streams);
  }
  for (const auto& [kind, detail] : shared.first_error) {
    fmt::print(stderr, "tern-loadgen: first {} error: {}\n", kind, detail);
  }
  return run;
}

}  // namespace tern::loadgen
