// The HTTP server over loopback with a Beast client, against the fake model service: every
// endpoint and error status, keep-alive, SSE framing, cancel on disconnect, drain.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "service/server.h"
#include "tests/e2e/service/fake_model_service.h"

namespace tern::service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Response = http::response<http::string_body>;
using namespace std::chrono_literals;

class Client {
 public:
  explicit Client(int port) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }

  Response request(http::verb method, std::string target, std::string body = {},
                   std::vector<std::pair<std::string, std::string>> headers = {}) {
    send(method, std::move(target), std::move(body), std::move(headers));
    return read();
  }

  void send(http::verb method, std::string target, std::string body = {},
            std::vector<std::pair<std::string, std::string>> headers = {}) {
    http::request<http::string_body> request{method, target, 11};
    request.set(http::field::host, "127.0.0.1");
    if (!body.empty()) request.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) request.set(name, value);
    request.body() = std::move(body);
    request.prepare_payload();
    http::write(socket_, request);
  }

  Response read() {
    Response response;
    beast::error_code ec;
    http::read(socket_, buffer_, response, ec);
    EXPECT_FALSE(ec) << ec.message();
    return response;
  }

  // Reads until the peer closes; true when it did within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout) {
    socket_.non_blocking(false);
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char byte;
    beast::error_code ec;
    for (;;) {
      socket_.read_some(asio::buffer(&byte, 1), ec);
      if (ec == asio::error::eof || ec == asio::error::connection_reset) return true;
      if (ec) return false;
    }
  }

  void write_raw(std::string_view bytes) { asio::write(socket_, asio::buffer(bytes)); }
  tcp::socket& socket() { return socket_; }
  beast::flat_buffer& buffer() { return buffer_; }

 private:
  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

// The log lines the server writes while it lives (the last 64), through the default logger.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    sink_->set_pattern("%v");
    auto capture = std::make_shared<spdlog::logger>("capture", sink_);
    capture->set_level(spdlog::level::info);
    spdlog::set_default_logger(capture);
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // The latest line holding `part`; empty when none does.
  std::string line_with(std::string_view part) const {
    std::string found;
    for (const std::string& line : sink_->last_formatted()) {
      if (line.find(part) != std::string::npos) found = line;
    }
    return found;
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_ =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
};

class ServerTest : public ::testing::Test {
 protected:
  void start(ServerConfig config = default_config(),
             testing::FakeModelService::Options fake_options = {}) {
    fake_ = std::make_unique<testing::FakeModelService>(fake_options);
    server_ = std::make_unique<Server>(config, *fake_, metrics_, Server::Options{false, 2});
    ASSERT_TRUE(server_->start().ok());
    thread_ = std::thread([this] { server_->run(); });
  }

  static ServerConfig default_config() {
    ServerConfig config;
    config.host = "127.0.0.1";
    config.port = 0;
    config.io_threads = 2;
    return config;
  }

  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  Client client() { return Client(server_->port()); }

  ServiceMetrics metrics_;
  std::unique_ptr<testing::FakeModelService> fake_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

constexpr const char* kChat = R"({"model":"fake","messages":[{"role":"user","content":"hi"}]})";

TEST_F(ServerTest, HealthReadyMetricsModels) {
  start();
  Client c = client();
  EXPECT_EQ(c.request(http::verb::get, "/health").result_int(), 200);
  EXPECT_EQ(c.request(http::verb::get, "/ready").result_int(), 200);
  fake_->set_ready(false);
  const Response not_ready = c.request(http::verb::get, "/ready");
  EXPECT_EQ(not_ready.result_int(), 503);
  EXPECT_NE(not_ready.body().find("\"code\":\"service_unavailable\""), std::string::npos);
  fake_->set_ready(true);

  const Response models = c.request(http::verb::get, "/v1/models");
  EXPECT_EQ(models.result_int(), 200);
  EXPECT_EQ(models[http::field::content_type], "application/json");
  EXPECT_NE(models.body().find(R"("id":"fake-alias")"), std::string::npos);
  EXPECT_NE(models.body().find(R"("owned_by":"tern")"), std::string::npos);
  const Response one = c.request(http::verb::get, "/v1/models/fake");
  EXPECT_EQ(one.result_int(), 200);
  EXPECT_EQ(one.body().rfind(R"({"id":"fake","object":"model","created":1700000000,)", 0), 0u);
  const Response missing = c.request(http::verb::get, "/v1/models/nope");
  EXPECT_EQ(missing.result_int(), 404);
  EXPECT_NE(missing.body().find("model_not_found"), std::string::npos);

  EXPECT_EQ(c.request(http::verb::post, "/v1/chat/completions", kChat).result_int(), 200);
  const Response scraped = c.request(http::verb::get, "/metrics");
  EXPECT_EQ(scraped.result_int(), 200);
  EXPECT_NE(scraped[http::field::content_type].find("text/plain; version=0.0.4"),
            std::string::npos);
  EXPECT_NE(
      scraped.body().find(
          R"(tern_requests_total{model="fake",endpoint="/v1/chat/completions",status="200"} 1)"),
      std::string::npos)
      << scraped.body();
  EXPECT_NE(scraped.body().find(R"(tern_kv_cache_usage_ratio{model="fake"} 0.25)"),
            std::string::npos);
  EXPECT_NE(scraped.body().find("tern_open_connections 1"), std::string::npos);
  EXPECT_NE(scraped.body().find(R"(tern_time_to_first_token_seconds_count{model="fake"} 1)"),
            std::string::npos);
}

TEST_F(ServerTest, ChatCompletionNonStreamed) {
  start();
  Client c = client();
  const Response response = c.request(
      http::verb::post, "/v1/chat/completions",
      R"({"model":"fake-alias","max_tokens":3,"n":2,"messages":[{"role":"user","content":"hello"}]})");
  ASSERT_EQ(response.result_int(), 200) << response.body();
  const std::string& body = response.body();
  EXPECT_EQ(body.rfind(R"({"id":"chatcmpl-)", 0), 0u);
  EXPECT_NE(body.find(R"("object":"chat.completion")"), std::string::npos);
  EXPECT_NE(body.find(R"("model":"fake-alias")"), std::string::npos);
  EXPECT_NE(body.find(R"({"index":0,"message":{"role":"assistant","content":"tok0 tok1 tok2 "},)"
                      R"("logprobs":null,"finish_reason":"length"})"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find(R"({"index":1,"message")"), std::string::npos);
  EXPECT_NE(body.find(R"("usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11,)"
                      R"("prompt_tokens_details":{"cached_tokens":0}})"),
            std::string::npos)
      << body;
}

TEST_F(ServerTest, ChatCompletionStreamedFormatAndHeaders) {
  start();
  Client c = client();
  const Response response =
      c.request(http::verb::post, "/v1/chat/completions",
                R"({"model":"fake","stream":true,"stream_options":{"include_usage":true},)"
                R"("max_tokens":2,"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_EQ(response.result_int(), 200);
  EXPECT_EQ(response[http::field::content_type], "text/event-stream");
  EXPECT_EQ(response[http::field::cache_control], "no-cache");
  EXPECT_EQ(response["X-Accel-Buffering"], "no");
  EXPECT_TRUE(response.chunked());
  const std::string& body = response.body();
  // Strip the varying id and check the sequence of events exactly.
  std::string normalized;
  std::size_t position = 0;
  while (position < body.size()) {
    const std::size_t end = body.find("\n\n", position);
    ASSERT_NE(end, std::string::npos);
    std::string event = body.substr(position, end - position);
    if (const auto id = event.find("\"id\":\""); id != std::string::npos) {
      event.replace(id, event.find('"', id + 6) + 1 - id, "\"id\":\"X\"");
    }
    if (const auto created = event.find("\"created\":"); created != std::string::npos) {
      event.replace(created, event.find(',', created) - created, "\"created\":0");
    }
    normalized += event + "\n";
    position = end + 2;
  }
  const std::string prefix = R"(data: {"id":"X","object":"chat.completion.chunk","created":0,)"
                             R"("model":"fake","choices":[)";
  EXPECT_EQ(normalized,
            prefix +
                R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
                R"("finish_reason":null}],"usage":null})"
                "\n" +
                prefix +
                R"({"index":0,"delta":{"content":"tok0 "},"logprobs":null,)"
                R"("finish_reason":null}],"usage":null})"
                "\n" +
                prefix +
                R"({"index":0,"delta":{"content":"tok1 "},"logprobs":null,)"
                R"("finish_reason":null}],"usage":null})"
                "\n" +
                prefix +
                R"({"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}],)"
                R"("usage":null})"
                "\n" +
                prefix +
                R"(],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4,)"
                R"("prompt_tokens_details":{"cached_tokens":0}}})"
                "\n"
                "data: [DONE]\n");
  // The connection stays usable after a stream.
  EXPECT_EQ(c.request(http::verb::get, "/health").result_int(), 200);
}

// While no token arrives (a long prefill), the stream carries SSE comments so proxies do not
// time it out; the events themselves are unchanged.
TEST_F(ServerTest, SlowStreamsCarryKeepaliveComments) {
  ServerConfig config = default_config();
  config.timeouts.sse_keepalive_s = 0.05;
  start(config, {std::chrono::milliseconds(300), 2});
  Client c = client();
  const Response response = c.request(http::verb::post, "/v1/chat/completions",
                                      R"({"model":"fake","stream":true,"max_tokens":2,)"
                                      R"("messages":[{"role":"user","content":"hi"}]})");
  ASSERT_EQ(response.result_int(), 200);
  const std::string& body = response.body();
  std::size_t comments = 0;
  for (std::size_t at = body.find(": keepalive\n\n"); at != std::string::npos;
       at = body.find(": keepalive\n\n", at + 1)) {
    ++comments;
  }
  EXPECT_GE(comments, 1u) << body;  // about 300 ms of waiting at one comment per 50 ms
  EXPECT_NE(body.find(R"("delta":{"content":"tok1 "})"), std::string::npos) << body;
  EXPECT_TRUE(body.ends_with("data: [DONE]\n\n")) << body;
}

// Past limits.max_connections a new connection gets a 503 with Retry-After and is closed; the
// connections already open keep working, and a slot freed by a close is usable again.
TEST_F(ServerTest, ConnectionCapAnswers503AndRecovers) {
  ServerConfig config = default_config();
  config.limits.max_connections = 2;
  start(config);
  Client first = client();
  Client second = client();
  EXPECT_EQ(first.request(http::verb::get, "/health").result_int(), 200);
  EXPECT_EQ(second.request(http::verb::get, "/health").result_int(), 200);
  {
    Client third = client();
    const Response refused = third.read();
    EXPECT_EQ(refused.result_int(), 503);
    EXPECT_EQ(refused[http::field::retry_after], "1");
    EXPECT_NE(refused.body().find("connection limit"), std::string::npos) << refused.body();
  }
  EXPECT_EQ(first.request(http::verb::get, "/health").result_int(), 200);
  second.socket().close();
  int status = 0;
  for (int attempt = 0; attempt < 100 && status != 200; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    Client retry = client();
    retry.send(http::verb::get, "/v1/models");  // probes are answered over the cap anyway
    http::response<http::string_body> response;
    beast::error_code ec;
    http::read(retry.socket(), retry.buffer(), response, ec);
    status = ec ? 0 : response.result_int();
  }
  EXPECT_EQ(status, 200);
}

// A connection flood must not fail a liveness probe: over the cap, /health and /ready are still
// answered on the control loop (and the connection then closes); anything else gets the
// connection-limit 503.
TEST_F(ServerTest, ProbesAreAnsweredOverTheConnectionCap) {
  ServerConfig config = default_config();
  config.limits.max_connections = 2;
  start(config);
  Client first = client();
  Client second = client();
  EXPECT_EQ(first.request(http::verb::get, "/health").result_int(), 200);
  EXPECT_EQ(second.request(http::verb::get, "/health").result_int(), 200);
  {
    Client probe = client();
    const Response health = probe.request(http::verb::get, "/health");
    EXPECT_EQ(health.result_int(), 200) << health.body();
    EXPECT_FALSE(health.keep_alive());
    EXPECT_TRUE(probe.closed_by_peer(3000ms));
  }
  {
    Client probe = client();
    EXPECT_EQ(probe.request(http::verb::get, "/ready").result_int(), 200);
  }
  {
    fake_->set_ready(false);
    Client probe = client();
    const Response loading = probe.request(http::verb::get, "/ready");
    EXPECT_EQ(loading.result_int(), 503);
    EXPECT_NE(loading.body().find("still loading"), std::string::npos) << loading.body();
    fake_->set_ready(true);
  }
  {
    Client other = client();
    const Response refused = other.request(http::verb::get, "/v1/models");
    EXPECT_EQ(refused.result_int(), 503);
    EXPECT_NE(refused.body().find("connection limit"), std::string::npos) << refused.body();
  }
  EXPECT_EQ(first.request(http::verb::get, "/v1/models").result_int(), 200);
}

// HEAD is GET without the body: the same status, type and Content-Length, and no body bytes, so
// the next response on the connection reads cleanly.
TEST_F(ServerTest, HeadAnswersLikeGetWithoutABody) {
  start();
  Client c = client();
  for (const char* target : {"/health", "/ready", "/v1/models"}) {
    const Response get = c.request(http::verb::get, target);
    c.send(http::verb::head, target);
    http::response_parser<http::string_body> head;
    head.skip(true);  // a response to HEAD has no body, whatever its Content-Length says
    beast::error_code ec;
    http::read(c.socket(), c.buffer(), head, ec);
    ASSERT_FALSE(ec) << target << ": " << ec.message();
    EXPECT_EQ(head.get().result_int(), get.result_int()) << target;
    EXPECT_EQ(head.get()[http::field::content_length], std::to_string(get.body().size())) << target;
    EXPECT_EQ(head.get()[http::field::content_type], get[http::field::content_type]) << target;
  }
  EXPECT_EQ(c.request(http::verb::get, "/health").body(), R"({"status":"ok"})");
}

// A body that is not JSON (a browser form post above all) is refused before it is parsed; with
// no API key set, that closes the cross-site form path to the generation endpoints.
TEST_F(ServerTest, PostBodyMustBeJson) {
  start();
  Client c = client();
  for (const char* type :
       {"application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"}) {
    const Response refused =
        c.request(http::verb::post, "/v1/chat/completions", kChat, {{"Content-Type", type}});
    EXPECT_EQ(refused.result_int(), 415) << type;
    EXPECT_NE(refused.body().find("application/json"), std::string::npos) << refused.body();
  }
  EXPECT_EQ(c.request(http::verb::post, "/tokenize", R"({"prompt":"hi"})",
                      {{"Content-Type", "text/plain"}})
                .result_int(),
            415);
  const std::string body = R"({"prompt":"a"})";
  c.write_raw("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(c.read().result_int(), 415);  // no Content-Type at all
  EXPECT_EQ(c.request(http::verb::post, "/v1/chat/completions", kChat,
                      {{"Content-Type", "Application/JSON; charset=utf-8"}})
                .result_int(),
            200);
}

// The access log line names the client and the request id; the response carries the id as
// X-Request-Id (the client's own when it sent a usable one) so the two can be matched.
TEST_F(ServerTest, AccessLogCarriesClientAndRequestId) {
  const LogCapture access_log;
  start();
  Client c = client();
  const Response given =
      c.request(http::verb::get, "/v1/models", "", {{"X-Request-Id", "probe-42"}});
  EXPECT_EQ(given["X-Request-Id"], "probe-42");
  const Response generated = c.request(http::verb::get, "/v1/models?second");
  const std::string id(generated["X-Request-Id"]);
  EXPECT_GE(id.size(), 8u);
  const Response hostile =
      c.request(http::verb::get, "/v1/models?third", "", {{"X-Request-Id", "a b\"c"}});
  EXPECT_NE(hostile["X-Request-Id"], "a b\"c");
  EXPECT_FALSE(hostile["X-Request-Id"].empty());

  const auto local = c.socket().local_endpoint();
  const std::string client_address =
      local.address().to_string() + ":" + std::to_string(local.port());
  auto line_with = [&](std::string_view part) { return access_log.line_with(part); };
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (line_with("/v1/models?third").empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  const std::string first_line = line_with("request_id=probe-42");
  EXPECT_NE(first_line.find(client_address), std::string::npos) << first_line;
  const std::string second_line = line_with("/v1/models?second");
  EXPECT_NE(second_line.find("request_id=" + id), std::string::npos) << second_line;
  EXPECT_NE(second_line.find(client_address), std::string::npos) << second_line;
  EXPECT_EQ(line_with("a b"), "");
}

// A stream cut by its client after tokens went out logs the tokens it sent, not zeros.
TEST_F(ServerTest, AccessLogCountsTheTokensOfAStreamItsClientLeft) {
  const LogCapture access_log;
  start(default_config(), {std::chrono::milliseconds(5), 5});
  {
    Client c = client();
    c.send(http::verb::post, "/v1/chat/completions",
           R"({"model":"fake","stream":true,"max_tokens":100000,)"
           R"("messages":[{"role":"user","content":"hi"}]})");
    http::response_parser<http::string_body> parser;
    http::read_header(c.socket(), c.buffer(), parser);
    ASSERT_EQ(parser.get().result_int(), 200);
    std::string seen;
    while (seen.find("tok2 ") == std::string::npos) {
      std::array<char, 4096> bytes{};
      const std::size_t got = c.socket().read_some(asio::buffer(bytes));
      seen.append(bytes.data(), got);
    }
  }  // the client leaves mid-stream
  auto line_with = [&](std::string_view part) { return access_log.line_with(part); };
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (line_with("/v1/chat/completions").empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  const std::string line = line_with("/v1/chat/completions");
  EXPECT_NE(line.find(" 499 "), std::string::npos) << line;
  EXPECT_NE(line.find("prompt_tokens=2 "), std::string::npos) << line;
  const std::size_t at = line.find("completion_tokens=");
  ASSERT_NE(at, std::string::npos) << line;
  EXPECT_GE(std::stoi(line.substr(at + 18)), 3) << line;
}

// RFC 9112: an HTTP/1.1 request without Host, or any request with two, is a 400; HTTP/1.0 had
// no Host and may go without.
TEST_F(ServerTest, Http11RequestsNeedExactlyOneHost) {
  start();
  auto status_of = [&](std::string_view raw) {
    Client c = client();
    c.write_raw(raw);
    return c.read().result_int();
  };
  EXPECT_EQ(status_of("GET /health HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST /v1/chat/completions HTTP/1.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: 2\r\n\r\n{}"),
            400);
  EXPECT_EQ(status_of("GET /health HTTP/1.1\r\nHost: a\r\n\r\n"), 200);
  EXPECT_EQ(status_of("GET /health HTTP/1.0\r\n\r\n"), 200);
}

TEST_F(ServerTest, CompletionsTokenizeDetokenize) {
  start();
  Client c = client();
  const Response completion =
      c.request(http::verb::post, "/v1/completions",
                R"({"model":"fake","prompt":["ab","cd"],"max_tokens":1,"logprobs":1})");
  ASSERT_EQ(completion.result_int(), 200) << completion.body();
  EXPECT_NE(completion.body().find(R"("object":"text_completion")"), std::string::npos);
  EXPECT_NE(
      completion.body().find(
          R"({"index":1,"text":"tok0 ","logprobs":{"tokens":["tok0 "],"token_logprobs":[-0.5],)"
          R"("top_logprobs":[{"tok0 ":-0.5,"x":-2}],"text_offset":[0]},"finish_reason":"length"})"),
      std::string::npos)
      << completion.body();

  const Response streamed = c.request(http::verb::post, "/v1/completions",
                                      R"({"prompt":[1,2,3],"max_tokens":1,"stream":true})");
  ASSERT_EQ(streamed.result_int(), 200);
  EXPECT_NE(streamed.body().find(R"("choices":[{"index":0,"text":"tok0 ","logprobs":null,)"
                                 R"("finish_reason":null}]})"),
            std::string::npos)
      << streamed.body();
  EXPECT_TRUE(streamed.body().ends_with("data: [DONE]\n\n"));

  const Response tokens =
      c.request(http::verb::post, "/tokenize", R"({"model":"fake","prompt":"hi"})");
  EXPECT_EQ(tokens.body(),
            R"({"count":2,"max_model_len":2048,"tokens":[104,105],"token_strs":null})");
  const Response text = c.request(http::verb::post, "/detokenize", R"({"tokens":[104,105]})");
  EXPECT_EQ(text.body(), R"({"prompt":"hi"})");
  const Response bad = c.request(http::verb::post, "/detokenize", R"({"tokens":[1000]})");
  EXPECT_EQ(bad.result_int(), 400);
}

// The next request on a keep-alive connection, sent the moment a stream ends, is answered: the
// read that watches a stream's client for a hang-up could take the next request's bytes as it
// was cancelled and drop them, and the connection then waited for them until idle_s (about 1
// run in 11 lost its next request; this test makes 200 such requests, with a 2 s idle_s).
TEST_F(ServerTest, ARequestSentAsAStreamEndsIsAnswered) {
  ServerConfig config = default_config();
  config.timeouts.idle_s = 2;
  start(config);
  Client c = client();
  for (int i = 0; i < 200; ++i) {
    const Response streamed = c.request(http::verb::post, "/v1/completions",
                                        R"({"prompt":[1,2,3],"max_tokens":1,"stream":true})");
    ASSERT_EQ(streamed.result_int(), 200) << "round " << i;
    const Response tokens =
        c.request(http::verb::post, "/tokenize", R"({"model":"fake","prompt":"hi"})");
    ASSERT_EQ(tokens.result_int(), 200) << "round " << i << ": " << tokens.body();
  }
}

TEST_F(ServerTest, ErrorStatuses) {
  ServerConfig config = default_config();
  config.limits.max_body_bytes = 1024;
  start(config);
  Client c = client();
  const Response not_found = c.request(http::verb::get, "/nope");
  EXPECT_EQ(not_found.result_int(), 404);
  EXPECT_EQ(not_found.body(),
            R"({"error":{"message":"No route for GET /nope","type":"invalid_request_error",)"
            R"("param":null,"code":"not_found"}})");
  EXPECT_EQ(c.request(http::verb::get, "/v1/chat/completions").result_int(), 405);

  const Response malformed = c.request(http::verb::post, "/v1/chat/completions", "{");
  EXPECT_EQ(malformed.result_int(), 400);
  const Response empty_messages =
      c.request(http::verb::post, "/v1/chat/completions", R"({"messages":[]})");
  EXPECT_EQ(empty_messages.result_int(), 400);
  EXPECT_NE(empty_messages.body().find(R"("param":"messages")"), std::string::npos);
  const Response unknown_model =
      c.request(http::verb::post, "/v1/chat/completions",
                R"({"model":"x","messages":[{"role":"user","content":"a"}]})");
  EXPECT_EQ(unknown_model.result_int(), 404);
  const Response busy = c.request(http::verb::post, "/v1/chat/completions",
                                  R"({"model":"busy","messages":[{"role":"user","content":"a"}]})");
  EXPECT_EQ(busy.result_int(), 429);
  EXPECT_EQ(busy[http::field::retry_after], "2");
  EXPECT_NE(busy.body().find("rate_limit_exceeded"), std::string::npos);
  const std::string long_prompt(2000, 'a');
  // A failure after the start arrives as the response's error for a non-streamed request.
  const Response failed =
      c.request(http::verb::post, "/v1/completions", R"({"prompt":"FAIL","max_tokens":3})");
  EXPECT_EQ(failed.result_int(), 500);

  Client big = client();
  const Response too_large =
      big.request(http::verb::post, "/v1/completions", R"({"prompt":")" + long_prompt + "\"}");
  EXPECT_EQ(too_large.result_int(), 413);
  EXPECT_NE(too_large.body().find("request_too_large"), std::string::npos);
}

TEST_F(ServerTest, ApiKeys) {
  ServerConfig config = default_config();
  config.api_keys = {"secret-one", "secret-two"};
  start(config);
  Client c = client();
  const Response missing = c.request(http::verb::get, "/v1/models");
  EXPECT_EQ(missing.result_int(), 401);
  EXPECT_NE(missing.body().find(R"("code":"invalid_api_key")"), std::string::npos);
  EXPECT_NE(missing.body().find("No API key provided"), std::string::npos) << missing.body();
  const Response wrong =
      c.request(http::verb::get, "/v1/models", "", {{"Authorization", "Bearer nope"}});
  EXPECT_EQ(wrong.result_int(), 401);
  EXPECT_NE(wrong.body().find("Incorrect API key provided"), std::string::npos) << wrong.body();
  const Response other_scheme =
      c.request(http::verb::get, "/v1/models", "", {{"Authorization", "Basic c2VjcmV0"}});
  EXPECT_NE(other_scheme.body().find("No API key provided"), std::string::npos)
      << other_scheme.body();
  // The tokenizer endpoints are not operational ones: they need the key too.
  EXPECT_EQ(c.request(http::verb::post, "/tokenize", R"({"prompt":"hi"})").result_int(), 401);
  EXPECT_EQ(c.request(http::verb::get, "/v1/models", "", {{"Authorization", "Bearer secret-two"}})
                .result_int(),
            200);
  EXPECT_EQ(c.request(http::verb::get, "/health").result_int(), 200);
  EXPECT_EQ(c.request(http::verb::get, "/metrics").result_int(), 200);
}

// One key's two long preparations (each "HOLD" prompt holds a preparation thread, as tokenizing
// a 7 MB prompt did) and then another key's small request: the small one is prepared and
// answered while the first key's are still held, and the first key's second one waits its
// turn. With the plain pool both threads were the first key's, and the small request waited for
// them. /tokenize takes its turn in the same lines.
TEST_F(ServerTest, AnotherKeysRequestIsPreparedWhileOneKeyHoldsThePool) {
  ServerConfig config = default_config();
  config.api_keys = {"key-a", "key-b"};
  start(config);
  auto send_held = [this](std::string target, std::string body) {
    return std::thread([this, target = std::move(target), body = std::move(body)] {
      Client c = client();
      const Response held =
          c.request(http::verb::post, target, body, {{"Authorization", "Bearer key-a"}});
      EXPECT_EQ(held.result_int(), 200) << held.body();
    });
  };
  // Polls `done` for up to `tries` times 5 ms; only a bound on waiting, never a measurement.
  auto wait_for = [](auto done, int tries = 2000) {
    for (int i = 0; i < tries && !done(); ++i) std::this_thread::sleep_for(5ms);
    return done();
  };
  std::thread first = send_held(
      "/v1/chat/completions", R"({"model":"fake","messages":[{"role":"user","content":"HOLD"}]})");
  ASSERT_TRUE(wait_for([&] { return fake_->holds_started() == 1; }));
  std::thread second = send_held("/tokenize", R"({"model":"fake","prompt":"HOLD too"})");
  // The second has reached the server and waits for its turn (with the plain pool it would hold
  // the other thread by now).
  wait_for([&] { return fake_->holds_started() == 2; }, 200);

  // The other key's request, watched from here so that a server that makes it wait for the
  // held ones fails the test instead of hanging it.
  Response small;
  int held_when_answered = -1;
  int started_when_answered = -1;
  std::atomic<bool> answered{false};
  std::thread other_key([&] {
    Client other = client();
    small =
        other.request(http::verb::post, "/v1/chat/completions", kChat, {{"x-api-key", "key-b"}});
    held_when_answered = fake_->held_count();
    started_when_answered = fake_->holds_started();
    answered.store(true);
  });
  wait_for([&] { return answered.load(); });
  if (answered.load()) {
    Client other = client();
    const Response count = other.request(http::verb::post, "/tokenize", R"({"prompt":"hi"})",
                                         {{"Authorization", "Bearer key-b"}});
    EXPECT_EQ(count.result_int(), 200) << count.body();
    EXPECT_EQ(fake_->held_count(), 1);
  }
  fake_->release_held();
  other_key.join();
  EXPECT_EQ(small.result_int(), 200) << small.body();
  // Answered while the first key still held a thread, its second request not yet started.
  EXPECT_EQ(held_when_answered, 1);
  EXPECT_EQ(started_when_answered, 1);
  fake_->release_held();
  first.join();
  second.join();
  EXPECT_EQ(fake_->holds_started(), 2);
}

TEST_F(ServerTest, ProtectedOperationalEndpoints) {
  ServerConfig config = default_config();
  config.api_keys = {"k"};
  config.protect_operational_endpoints = true;
  start(config);
  Client c = client();
  EXPECT_EQ(c.request(http::verb::get, "/health").result_int(), 401);
  EXPECT_EQ(
      c.request(http::verb::get, "/metrics", "", {{"Authorization", "Bearer k"}}).result_int(),
      200);
}

TEST_F(ServerTest, HeaderTimeoutGives408AndIdleConnectionsClose) {
  ServerConfig config = default_config();
  config.timeouts.header_s = 0.3;
  config.timeouts.idle_s = 0.3;
  start(config);
  Client partial = client();
  partial.write_raw("GET /health HTTP/1.1\r\nHost: x\r\n");
  const Response timed_out = partial.read();
  EXPECT_EQ(timed_out.result_int(), 408);
  EXPECT_NE(timed_out.body().find("request_timeout"), std::string::npos);

  Client idle = client();
  EXPECT_EQ(idle.request(http::verb::get, "/health").result_int(), 200);
  EXPECT_TRUE(idle.closed_by_peer(3000ms));
}

TEST_F(ServerTest, KeepAliveServesSequentialRequestsOnOneConnection) {
  start();
  Client c = client();
  for (int i = 0; i < 5; ++i) {
    const Response response = c.request(http::verb::post, "/v1/chat/completions", kChat);
    EXPECT_EQ(response.result_int(), 200);
    EXPECT_TRUE(response.keep_alive());
  }
  EXPECT_EQ(server_->open_connections(), 1u);
}

// Requests pipelined in one write: the first moves the connection to the streams event loop,
// and the bytes already read for the ones behind it move along and are answered in order.
TEST_F(ServerTest, PipelinedRequestsSurviveTheMoveToTheStreamsLoop) {
  start();
  Client c = client();
  const auto post = [](std::string_view target, std::string_view body) {
    return "POST " + std::string(target) +
           " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
  };
  const std::string pipelined = post("/v1/chat/completions", kChat) +
                                "GET /health HTTP/1.1\r\nHost: x\r\n\r\n" +
                                post("/v1/completions", R"({"model":"fake","prompt":"hello"})");
  c.write_raw(pipelined);
  const Response chat = c.read();
  EXPECT_EQ(chat.result_int(), 200);
  EXPECT_NE(chat.body().find("chat.completion"), std::string::npos) << chat.body();
  const Response health = c.read();
  EXPECT_EQ(health.result_int(), 200);
  EXPECT_EQ(health.body(), R"({"status":"ok"})");
  const Response completion = c.read();
  EXPECT_EQ(completion.result_int(), 200);
  EXPECT_NE(completion.body().find("text_completion"), std::string::npos) << completion.body();
  EXPECT_EQ(server_->open_connections(), 1u);
}

TEST_F(ServerTest, ClientDisconnectCancelsTheRequest) {
  start(default_config(), {std::chrono::milliseconds(10), 5});
  {
    Client c = client();
    c.send(http::verb::post, "/v1/chat/completions",
           R"({"model":"fake","stream":true,"max_tokens":100000,)"
           R"("messages":[{"role":"user","content":"hi"}]})");
    http::response_parser<http::empty_body> header;
    http::read_header(c.socket(), c.buffer(), header);
    EXPECT_EQ(header.get().result_int(), 200);
    std::this_thread::sleep_for(50ms);
  }  // the socket closes here
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (fake_->cancelled_count() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(fake_->cancelled_count(), 1);
  while (fake_->active_count() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(fake_->active_count(), 0);
}

// A client that stops reading is dropped once its stream has stayed over the output bound for
// slow_client_s: its request is cancelled, its connection closed, and a stream beside it that
// reads normally is not disturbed (the producer never waits on the slow one).
TEST_F(ServerTest, SlowClientIsDroppedAndItsRequestCancelled) {
  ServerConfig config = default_config();
  config.limits.stream_buffer_bytes = 64 << 10;
  config.timeouts.slow_client_s = 0.5;
  testing::FakeModelService::Options fake_options{std::chrono::milliseconds(1), 5};
  fake_options.token_padding_bytes = 16 << 10;  // about 16 MB/s per stream
  start(config, fake_options);

  // A small receive buffer so the kernel cannot absorb the whole stream on the client's behalf.
  asio::io_context io;
  tcp::socket slow(io);
  slow.open(tcp::v4());
  slow.set_option(asio::socket_base::receive_buffer_size(4096));
  slow.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
  http::request<http::string_body> request{http::verb::post, "/v1/chat/completions", 11};
  request.set(http::field::host, "127.0.0.1");
  request.set(http::field::content_type, "application/json");
  request.body() = R"({"model":"fake","stream":true,"max_tokens":1000000,)"
                   R"("messages":[{"role":"user","content":"slow"}]})";
  request.prepare_payload();
  http::write(slow, request);
  beast::flat_buffer slow_buffer;
  http::response_parser<http::empty_body> header;
  http::read_header(slow, slow_buffer, header);
  ASSERT_EQ(header.get().result_int(), 200);
  // From here on the slow client reads nothing.

  Client reader = client();
  const Response normal = reader.request(http::verb::post, "/v1/chat/completions",
                                         R"({"model":"fake","stream":true,"max_tokens":50,)"
                                         R"("messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(normal.result_int(), 200);
  EXPECT_TRUE(normal.body().ends_with("data: [DONE]\n\n"));
  EXPECT_NE(normal.body().find("tok49 "), std::string::npos);

  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (fake_->cancelled_count() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(fake_->cancelled_count(), 1);
  while (fake_->active_count() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(fake_->active_count(), 0);

  // What the kernel already held still arrives, then the server's close.
  timeval tv{5, 0};
  setsockopt(slow.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::vector<char> sink(1 << 16);
  beast::error_code ec;
  std::size_t drained = 0;
  while (!ec) drained += slow.read_some(asio::buffer(sink), ec);
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
  EXPECT_LT(drained, std::size_t{64} << 20);  // not the million-token stream

  const Response scraped = reader.request(http::verb::get, "/metrics");
  EXPECT_NE(
      scraped.body().find(
          R"(tern_requests_total{model="fake",endpoint="/v1/chat/completions",status="499"} 1)"),
      std::string::npos)
      << scraped.body();
  // Unlike a client that hung up, the drop says why.
  EXPECT_NE(
      scraped.body().find(R"(tern_streams_dropped_total{model="fake",reason="slow_client"} 1)"),
      std::string::npos)
      << scraped.body();
}

// Tokens are small writes; with Nagle's algorithm on, each stream's first token waited for the
// client's delayed ACK (about 40 ms). The server's side of an accepted connection, found among
// this process's descriptors, must have TCP_NODELAY set.
TEST_F(ServerTest, AcceptedConnectionsDisableNagle) {
  start();
  Client c = client();
  EXPECT_EQ(c.request(http::verb::get, "/health").result_int(), 200);
  const auto client_end = c.socket().local_endpoint();
  int server_side = -1;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::stoi(entry.path().filename().string());
    sockaddr_in peer{};
    socklen_t length = sizeof peer;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) continue;
    if (peer.sin_family == AF_INET && ntohs(peer.sin_port) == client_end.port() &&
        fd != c.socket().native_handle()) {
      server_side = fd;
    }
  }
  ASSERT_GE(server_side, 0) << "the server's end of the connection was not found";
  int no_delay = 0;
  socklen_t length = sizeof no_delay;
  ASSERT_EQ(getsockopt(server_side, IPPROTO_TCP, TCP_NODELAY, &no_delay, &length), 0);
  EXPECT_NE(no_delay, 0);
}

// Operational endpoints are answered on the control thread, not on the threads that carry the
// streams: /health answers while the only streams thread is held by a stream.
TEST_F(ServerTest, HealthAnswersWhileTheStreamsThreadIsBusy) {
  ServerConfig config = default_config();
  config.io_threads = 1;
  testing::FakeModelService::Options fake_options;
  fake_options.block_duration = std::chrono::milliseconds(3000);
  start(config, fake_options);
  Client streaming = client();
  streaming.send(http::verb::post, "/v1/chat/completions",
                 R"({"model":"fake","stream":true,"max_tokens":3,)"
                 R"("messages":[{"role":"user","content":"BLOCK"}]})");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!fake_->blocking() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(fake_->blocking());
  Client probe = client();
  EXPECT_EQ(probe.request(http::verb::get, "/health").result_int(), 200);
  EXPECT_EQ(probe.request(http::verb::get, "/ready").result_int(), 200);
  EXPECT_TRUE(fake_->blocking()) << "/health waited for the busy streams thread";
  const Response finished = streaming.read();
  EXPECT_TRUE(finished.body().ends_with("data: [DONE]\n\n"));
}

TEST_F(ServerTest, HealthAnswersWhileManyStreamsAreOpen) {
  start(default_config(), {std::chrono::milliseconds(20), 5});
  constexpr int kStreams = 200;
  std::vector<std::unique_ptr<Client>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<Client>(server_->port()));
    streams.back()->send(http::verb::post, "/v1/chat/completions",
                         R"({"model":"fake","stream":true,"max_tokens":100000,)"
                         R"("messages":[{"role":"user","content":"hi"}]})");
  }
  for (auto& stream : streams) {
    http::response_parser<http::empty_body> header;
    http::read_header(stream->socket(), stream->buffer(), header);
    ASSERT_EQ(header.get().result_int(), 200);
  }
  EXPECT_EQ(fake_->active_count(), kStreams);
  Client health = client();
  EXPECT_EQ(health.request(http::verb::get, "/health").result_int(), 200);
  streams.clear();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (fake_->cancelled_count() < kStreams && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(fake_->cancelled_count(), kStreams);
}

TEST_F(ServerTest, DrainFinishesInFlightStreamsThenStops) {
  start(default_config(), {std::chrono::milliseconds(20), 5});
  Client waiting = client();
  EXPECT_EQ(waiting.request(http::verb::get, "/ready").result_int(), 200);
  Client streaming = client();
  // 100 tokens at 20 ms keep the drain going for about 2 s, long enough that a loaded machine
  // still asks /ready while the stream runs.
  streaming.send(http::verb::post, "/v1/chat/completions",
                 R"({"model":"fake","stream":true,"max_tokens":100,)"
                 R"("messages":[{"role":"user","content":"hi"}]})");
  http::response_parser<http::string_body> parser;
  http::read_header(streaming.socket(), streaming.buffer(), parser);
  server_->drain();
  // drain() posts the work to the control thread; draining() turns true once that thread began.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!server_->draining() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(server_->draining());
  const Response ready = waiting.request(http::verb::get, "/ready");
  EXPECT_EQ(ready.result_int(), 503);
  EXPECT_FALSE(ready.keep_alive());
  http::read(streaming.socket(), streaming.buffer(), parser);
  EXPECT_TRUE(parser.get().body().ends_with("data: [DONE]\n\n"));
  EXPECT_EQ(fake_->cancelled_count(), 0);
  thread_.join();  // run() returns once drained
  EXPECT_FALSE(server_->drain_timed_out());
  EXPECT_THROW(Client(server_->port()), boost::system::system_error);
}

// When timeouts.drain_s runs out, the requests still running end with an error that says so:
// a stream with an error event and [DONE], a non-streamed request with a 503; then run()
// returns and drain_timed_out() tells the caller the drain was incomplete.
TEST_F(ServerTest, DrainTimeoutEndsOpenRequestsWithAnError) {
  ServerConfig config = default_config();
  config.timeouts.drain_s = 0.2;
  start(config, {std::chrono::milliseconds(5), 5});
  Client streaming = client();
  streaming.send(http::verb::post, "/v1/chat/completions",
                 R"({"model":"fake","stream":true,"max_tokens":1000000,)"
                 R"("messages":[{"role":"user","content":"hi"}]})");
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  http::read_header(streaming.socket(), streaming.buffer(), parser);
  Client collecting = client();
  collecting.send(http::verb::post, "/v1/chat/completions",
                  R"({"model":"fake","max_tokens":1000000,)"
                  R"("messages":[{"role":"user","content":"hi"}]})");
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (fake_->active_count() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(fake_->active_count(), 2);
  server_->drain();
  thread_.join();  // run() returns once the cut requests are answered
  EXPECT_TRUE(server_->drain_timed_out());
  server_.reset();  // closes what is left, so the reads below end either way

  beast::error_code read_error;
  http::read(streaming.socket(), streaming.buffer(), parser, read_error);
  EXPECT_FALSE(read_error) << read_error.message();
  const std::string& events = parser.get().body();
  const std::size_t error = events.rfind(R"(data: {"error":)");
  ASSERT_NE(error, std::string::npos)
      << events.substr(events.size() - std::min<std::size_t>(events.size(), 500));
  EXPECT_NE(events.find("drain timeout", error), std::string::npos) << events.substr(error);
  EXPECT_TRUE(events.ends_with("data: [DONE]\n\n")) << events.substr(error);
  const Response collected = collecting.read();
  EXPECT_EQ(collected.result_int(), 503);
  EXPECT_NE(collected.body().find("drain timeout"), std::string::npos) << collected.body();

  EXPECT_EQ(fake_->cancelled_count(), 2);
  const std::string scraped = metrics_.render();
  EXPECT_NE(scraped.find(R"(tern_streams_dropped_total{model="fake",reason="drain_timeout"} 2)"),
            std::string::npos)
      << scraped;
}

TEST_F(ServerTest, StreamedErrorAfterStartIsAnEvent) {
  start();
  Client c = client();
  const Response response =
      c.request(http::verb::post, "/v1/chat/completions",
                R"({"stream":true,"max_tokens":5,"messages":[{"role":"user","content":"FAIL"}]})");
  EXPECT_EQ(response.result_int(), 200);
  EXPECT_NE(
      response.body().find(R"(data: {"error":{"message":"the fake engine failed on purpose")"),
      std::string::npos)
      << response.body();
  EXPECT_TRUE(response.body().ends_with("data: [DONE]\n\n"));
}

}  // namespace
}  // namespace tern::service
