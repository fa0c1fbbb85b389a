// Anthropic's Messages door over loopback against the fake model service: /v1/messages streamed
// and not, thinking and tool_use blocks, errors in Anthropic's shape, x-api-key, ?beta=true,
// ping during a long prefill, and count_tokens agreeing with usage.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
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
using Headers = std::vector<std::pair<std::string, std::string>>;

const Headers kAnthropicHeaders = {{"anthropic-version", "2023-06-01"},
                                   {"anthropic-beta", "interleaved-thinking-2025-05-14"}};

class AnthropicTest : public ::testing::Test {
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

  // One request on a fresh connection, with Anthropic's headers and any others.
  Response post(std::string target, std::string body, Headers headers = kAnthropicHeaders) {
    return send(http::verb::post, std::move(target), std::move(body), std::move(headers));
  }

  Response send(http::verb method, std::string target, std::string body, Headers headers) {
    asio::io_context io;
    tcp::socket socket(io);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
    http::request<http::string_body> request{method, target, 11};
    request.set(http::field::host, "127.0.0.1");
    request.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) request.set(name, value);
    request.body() = std::move(body);
    request.prepare_payload();
    http::write(socket, request);
    beast::flat_buffer buffer;
    Response response;
    beast::error_code ec;
    http::read(socket, buffer, response, ec);
    EXPECT_FALSE(ec) << ec.message();
    return response;
  }

  ServiceMetrics metrics_;
  std::unique_ptr<testing::FakeModelService> fake_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

struct SseEvent {
  std::string name;
  std::string data;
};

// Splits an SSE body into its events; each must be `event:` then one `data:` line.
std::vector<SseEvent> events_of(const std::string& body) {
  std::vector<SseEvent> events;
  std::size_t at = 0;
  while (at < body.size()) {
    const std::size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string frame = body.substr(at, end - at);
    at = end + 2;
    const std::size_t newline = frame.find('\n');
    if (!frame.starts_with("event: ") || newline == std::string::npos ||
        frame.compare(newline + 1, 6, "data: ") != 0) {
      ADD_FAILURE() << "not an Anthropic SSE event: " << frame;
      continue;
    }
    events.push_back({frame.substr(7, newline - 7), frame.substr(newline + 7)});
  }
  EXPECT_EQ(at, body.size()) << "trailing bytes: " << body.substr(at);
  return events;
}

std::vector<std::string> names_of(const std::vector<SseEvent>& events) {
  std::vector<std::string> names;
  for (const SseEvent& event : events) names.push_back(event.name);
  return names;
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// The value of `"input_tokens":N` (or another integer field) in a JSON body.
int integer_field(const std::string& body, std::string_view name) {
  const std::string key = "\"" + std::string(name) + "\":";
  const std::size_t at = body.find(key);
  if (at == std::string::npos) return -1;
  return std::stoi(body.substr(at + key.size()));
}

constexpr const char* kHello =
    R"({"model":"fake","max_tokens":3,"messages":[{"role":"user","content":"hello"}]})";

TEST_F(AnthropicTest, NonStreamedMessageWithBetaQuery) {
  start();
  const Response response = post("/v1/messages?beta=true", kHello);
  ASSERT_EQ(response.result_int(), 200) << response.body();
  EXPECT_EQ(response[http::field::content_type], "application/json");
  const std::string& body = response.body();
  EXPECT_TRUE(body.starts_with(R"({"id":"msg_)")) << body;
  EXPECT_TRUE(contains(body, R"("type":"message","role":"assistant","model":"fake",)"
                             R"("content":[{"type":"text","text":"tok0 tok1 tok2 "}],)"
                             R"("stop_reason":"max_tokens","stop_sequence":null,)"
                             R"("usage":{"input_tokens":5,"cache_creation_input_tokens":0,)"
                             R"("cache_read_input_tokens":0,"output_tokens":3}})"))
      << body;
}

TEST_F(AnthropicTest, StreamedMessageFollowsAnthropicsEventSequence) {
  start();
  const Response response =
      post("/v1/messages", R"({"model":"fake","max_tokens":3,"stream":true,)"
                           R"("system":[{"type":"text","text":"sys"}],)"
                           R"("messages":[{"role":"user","content":"hello"}]})");
  ASSERT_EQ(response.result_int(), 200) << response.body();
  EXPECT_EQ(response[http::field::content_type], "text/event-stream");
  const auto events = events_of(response.body());
  EXPECT_EQ(names_of(events),
            (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                      "content_block_delta", "content_block_delta",
                                      "content_block_stop", "message_delta", "message_stop"}))
      << response.body();
  ASSERT_EQ(events.size(), 8u);
  EXPECT_TRUE(contains(events[0].data, R"({"type":"message_start","message":{"id":"msg_)"));
  // The prompt is "sys" + "hello": 8 tokens, known before any output.
  EXPECT_TRUE(contains(events[0].data, R"("usage":{"input_tokens":8,)")) << events[0].data;
  EXPECT_EQ(events[2].data,
            R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta",)"
            R"("text":"tok0 "}})");
  EXPECT_EQ(events[6].data,
            R"({"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},)"
            R"("usage":{"input_tokens":8,"cache_creation_input_tokens":0,)"
            R"("cache_read_input_tokens":0,"output_tokens":3}})");
  EXPECT_EQ(events[7].data, R"({"type":"message_stop"})");
}

TEST_F(AnthropicTest, ThinkingTextAndToolUse) {
  start();
  const std::string body =
      R"({"model":"fake","max_tokens":4,"thinking":{"type":"enabled","budget_tokens":1024},)"
      R"("tools":[{"name":"get_weather","input_schema":{"type":"object"}}],)"
      R"("messages":[{"role":"user","content":"THINK then TOOL"}])";
  const Response whole = post("/v1/messages", body + "}");
  ASSERT_EQ(whole.result_int(), 200) << whole.body();
  EXPECT_TRUE(contains(
      whole.body(),
      R"("content":[{"type":"thinking","thinking":"think0 think1 ","signature":""},)"
      R"({"type":"text","text":"tok2 tok3 "},)"
      R"({"type":"tool_use","id":"toolu_fake0","name":"get_weather","input":{"city":"Paris"}}],)"
      R"("stop_reason":"tool_use")"))
      << whole.body();

  const Response streamed = post("/v1/messages", body + R"(,"stream":true})");
  ASSERT_EQ(streamed.result_int(), 200);
  const auto events = events_of(streamed.body());
  EXPECT_EQ(
      names_of(events),
      (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                "content_block_delta", "content_block_delta", "content_block_stop",
                                "content_block_start", "content_block_delta", "content_block_delta",
                                "content_block_stop", "content_block_start", "content_block_delta",
                                "content_block_stop", "message_delta", "message_stop"}))
      << streamed.body();
  ASSERT_EQ(events.size(), 15u);
  EXPECT_TRUE(contains(events[1].data, R"("content_block":{"type":"thinking")"));
  EXPECT_TRUE(contains(events[4].data, R"("delta":{"type":"signature_delta","signature":""})"));
  EXPECT_TRUE(contains(events[6].data, R"("index":1,"content_block":{"type":"text")"));
  EXPECT_EQ(events[10].data,
            R"({"type":"content_block_start","index":2,"content_block":{"type":"tool_use",)"
            R"("id":"toolu_fake0","name":"get_weather","input":{}}})");
  EXPECT_EQ(events[11].data,
            R"({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta",)"
            R"("partial_json":"{\"city\":\"Paris\"}"}})");
  EXPECT_TRUE(contains(events[13].data, R"("stop_reason":"tool_use")"));
}

TEST_F(AnthropicTest, ToolResultRoundTrip) {
  start();
  const Response response =
      post("/v1/messages",
           R"({"model":"fake","max_tokens":2,"messages":[)"
           R"({"role":"user","content":"weather?"},)"
           R"({"role":"assistant","content":[{"type":"tool_use","id":"toolu_fake0",)"
           R"("name":"get_weather","input":{"city":"Paris"}}]},)"
           R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_fake0",)"
           R"("content":[{"type":"text","text":"sunny"}]}]}]})");
  ASSERT_EQ(response.result_int(), 200) << response.body();
  // "weather?" + "sunny": the tool's answer reached the prompt.
  EXPECT_EQ(integer_field(response.body(), "input_tokens"), 13) << response.body();
}

TEST_F(AnthropicTest, ErrorsInAnthropicsShape) {
  start();
  const Response missing = post("/v1/messages", R"({"model":"fake","messages":[]})");
  EXPECT_EQ(missing.result_int(), 400);
  EXPECT_EQ(missing.body(),
            R"({"type":"error","error":{"type":"invalid_request_error",)"
            R"("message":"messages: 'messages' must contain at least one message"}})");
  const Response image = post(
      "/v1/messages",
      R"({"model":"fake","max_tokens":1,"messages":[{"role":"user","content":[)"
      R"({"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]}]})");
  EXPECT_EQ(image.result_int(), 400);
  EXPECT_TRUE(contains(image.body(), R"("message":"messages[0].content[0].type: )"))
      << image.body();
  // A forced tool without its name: the error in Anthropic's shape, naming the field.
  const Response forced = post("/v1/messages?beta=true",
                               R"({"model":"fake","max_tokens":1,"tool_choice":{"type":"tool"},)"
                               R"("messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(forced.result_int(), 400);
  EXPECT_TRUE(contains(forced.body(), R"("message":"tool_choice.name: )")) << forced.body();

  const Response unknown =
      post("/v1/messages", R"({"model":"nope","max_tokens":1,"messages":[{"role":"user",)"
                           R"("content":"hi"}]})");
  EXPECT_EQ(unknown.result_int(), 404);
  EXPECT_TRUE(contains(unknown.body(), R"({"type":"error","error":{"type":"not_found_error",)"))
      << unknown.body();
  const Response busy =
      post("/v1/messages", R"({"model":"busy","max_tokens":1,"messages":[{"role":"user",)"
                           R"("content":"hi"}]})");
  EXPECT_EQ(busy.result_int(), 429);
  EXPECT_EQ(busy[http::field::retry_after], "2");
  EXPECT_TRUE(contains(busy.body(), R"("type":"rate_limit_error")")) << busy.body();
  const Response not_json = post("/v1/messages", "{");
  EXPECT_EQ(not_json.result_int(), 400);
  EXPECT_TRUE(contains(not_json.body(), R"("type":"invalid_request_error")")) << not_json.body();
  const Response wrong_type = post("/v1/messages", "x=1", {{"Content-Type", "text/plain"}});
  EXPECT_EQ(wrong_type.result_int(), 415);
  EXPECT_TRUE(wrong_type.body().starts_with(R"({"type":"error")")) << wrong_type.body();

  // A failure after the headers is an `event: error`; without streaming, a 500 api_error.
  const std::string failing =
      R"({"model":"fake","max_tokens":4,"messages":[{"role":"user","content":"FAIL"}])";
  const Response streamed = post("/v1/messages", failing + R"(,"stream":true})");
  ASSERT_EQ(streamed.result_int(), 200);
  const auto events = events_of(streamed.body());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "error");
  EXPECT_EQ(events.back().data, R"({"type":"error","error":{"type":"api_error",)"
                                R"("message":"the fake engine failed on purpose"}})");
  const Response whole = post("/v1/messages", failing + "}");
  EXPECT_EQ(whole.result_int(), 500);
  EXPECT_EQ(whole.body(), R"({"type":"error","error":{"type":"api_error",)"
                          R"("message":"the fake engine failed on purpose"}})");

  // A wrong method or an unknown path under /v1/messages: Anthropic's shape too.
  const Response wrong_method = send(http::verb::get, "/v1/messages", "", kAnthropicHeaders);
  EXPECT_EQ(wrong_method.result_int(), 405);
  EXPECT_TRUE(wrong_method.body().starts_with(R"({"type":"error","error":{)"))
      << wrong_method.body();
  const Response no_path = post("/v1/messages/batches", "{}");
  EXPECT_EQ(no_path.result_int(), 404);
  EXPECT_TRUE(contains(no_path.body(), R"({"type":"error","error":{"type":"not_found_error",)"))
      << no_path.body();

  // OpenAI's doors keep OpenAI's shape.
  const Response openai = post("/v1/chat/completions", R"({"model":"nope","messages":[]})", {});
  EXPECT_TRUE(openai.body().starts_with(R"({"error":{)")) << openai.body();
}

TEST_F(AnthropicTest, ApiKeyInXApiKeyOrBearer) {
  ServerConfig config = default_config();
  config.api_keys = {"secret"};
  start(config);
  const Response missing = post("/v1/messages", kHello);
  EXPECT_EQ(missing.result_int(), 401);
  EXPECT_TRUE(
      contains(missing.body(), R"({"type":"error","error":{"type":"authentication_error",)"))
      << missing.body();
  Headers wrong = kAnthropicHeaders;
  wrong.emplace_back("x-api-key", "nope");
  const Response rejected = post("/v1/messages", kHello, wrong);
  EXPECT_EQ(rejected.result_int(), 401);
  EXPECT_TRUE(contains(rejected.body(), "Incorrect API key")) << rejected.body();
  Headers right = kAnthropicHeaders;
  right.emplace_back("x-api-key", "secret");
  EXPECT_EQ(post("/v1/messages", kHello, right).result_int(), 200);
  EXPECT_EQ(post("/v1/messages/count_tokens", kHello, right).result_int(), 200);
  EXPECT_EQ(post("/v1/messages", kHello, {{"Authorization", "Bearer secret"}}).result_int(), 200);
  // The OpenAI doors take x-api-key too; a wrong Bearer key is not rescued by it.
  EXPECT_EQ(post("/v1/chat/completions",
                 R"({"model":"fake","messages":[{"role":"user",)"
                 R"("content":"hi"}]})",
                 {{"x-api-key", "secret"}})
                .result_int(),
            200);
  EXPECT_EQ(
      post("/v1/messages", kHello, {{"Authorization", "Bearer nope"}, {"x-api-key", "secret"}})
          .result_int(),
      401);
}

TEST_F(AnthropicTest, CountTokensEqualsUsage) {
  start();
  const std::string request =
      R"({"model":"fake","max_tokens":2,"system":"be brief",)"
      R"("tools":[{"name":"get_weather","input_schema":{"type":"object"}}],)"
      R"("messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},)"
      R"({"role":"user","content":"CACHED again"}]})";
  const Response counted = post("/v1/messages/count_tokens?beta=true", request);
  ASSERT_EQ(counted.result_int(), 200) << counted.body();
  EXPECT_EQ(counted.body(), R"({"input_tokens":27})");
  const Response answered = post("/v1/messages", request);
  ASSERT_EQ(answered.result_int(), 200) << answered.body();
  // input_tokens leaves out the tokens read from the prefix cache, as Anthropic's does.
  EXPECT_EQ(integer_field(answered.body(), "input_tokens") +
                integer_field(answered.body(), "cache_read_input_tokens"),
            27)
      << answered.body();
  EXPECT_EQ(integer_field(answered.body(), "cache_read_input_tokens"), 3);

  const Response unknown = post("/v1/messages/count_tokens",
                                R"({"model":"nope","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(unknown.result_int(), 404);
  EXPECT_TRUE(contains(unknown.body(), R"("type":"not_found_error")")) << unknown.body();
  const Response bad = post("/v1/messages/count_tokens", R"({"model":"fake"})");
  EXPECT_EQ(bad.result_int(), 400);
  EXPECT_EQ(bad.body(), R"({"type":"error","error":{"type":"invalid_request_error",)"
                        R"("message":"messages: Missing required parameter: 'messages'"}})");
}

// While no token arrives (a long prefill), the stream carries Anthropic's ping events.
TEST_F(AnthropicTest, SlowStreamsCarryPings) {
  ServerConfig config = default_config();
  config.timeouts.sse_keepalive_s = 0.05;
  start(config, {std::chrono::milliseconds(300), 2});
  const Response response = post("/v1/messages", R"({"model":"fake","max_tokens":2,"stream":true,)"
                                                 R"("messages":[{"role":"user","content":"hi"}]})");
  ASSERT_EQ(response.result_int(), 200);
  const auto events = events_of(response.body());
  std::size_t pings = 0;
  for (const SseEvent& event : events) {
    if (event.name == "ping") {
      ++pings;
      EXPECT_EQ(event.data, R"({"type":"ping"})");
    }
  }
  EXPECT_GE(pings, 1u) << response.body();
  EXPECT_FALSE(contains(response.body(), ": keepalive")) << response.body();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().name, "message_stop");
}

}  // namespace
}  // namespace tern::service
