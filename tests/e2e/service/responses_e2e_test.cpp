// OpenAI's Responses door over loopback against the fake model service: /v1/responses streamed
// and not, reasoning and function_call items, usage with cached tokens, max_output_tokens as
// incomplete, a failure mid-stream, previous_response_id continuing a stored conversation, GET
// and DELETE of stored responses with their 404s, and with API keys each key's own store.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "service/server.h"
#include "tests/e2e/service/fake_model_service.h"
#include "tests/support/compact_json.h"

namespace tern::service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Response = http::response<http::string_body>;

class ResponsesTest : public ::testing::Test {
 protected:
  void SetUp() override { start(ServerConfig{}); }

  void start(ServerConfig config) {
    config.host = "127.0.0.1";
    config.port = 0;
    config.io_threads = 2;
    fake_ = std::make_unique<testing::FakeModelService>();
    server_ = std::make_unique<Server>(config, *fake_, metrics_, Server::Options{false, 2});
    ASSERT_TRUE(server_->start().ok());
    thread_ = std::thread([this] { server_->run(); });
  }

  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  // One request on a fresh connection.
  Response send(http::verb method, std::string target, std::string body = {},
                const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    asio::io_context io;
    tcp::socket socket(io);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
    http::request<http::string_body> request{method, target, 11};
    request.set(http::field::host, "127.0.0.1");
    if (!body.empty()) request.set(http::field::content_type, "application/json");
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
  Response post(std::string body) { return send(http::verb::post, "/v1/responses", body); }

  ServiceMetrics metrics_;
  std::unique_ptr<testing::FakeModelService> fake_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// The response's "resp_…" id: the first "id" of the body, or of a streamed response.created.
std::string response_id_of(const std::string& body) {
  const std::size_t at = body.find(R"("id":"resp_)");
  if (at == std::string::npos) return {};
  const std::size_t start = at + 6;
  return body.substr(start, body.find('"', start) - start);
}

struct SseEvent {
  std::string type;
  std::string data;
};

// Splits an SSE body into events, checking that each is `event:` then one `data:` line whose
// type matches and whose sequence_number counts up from 0.
std::vector<SseEvent> events_of(const std::string& body) {
  std::vector<SseEvent> events;
  std::size_t at = 0;
  while (at < body.size()) {
    const std::size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string frame = body.substr(at, end - at);
    at = end + 2;
    if (frame.starts_with(":")) continue;  // a keepalive comment
    const std::size_t newline = frame.find('\n');
    if (!frame.starts_with("event: ") || newline == std::string::npos ||
        frame.compare(newline + 1, 6, "data: ") != 0) {
      ADD_FAILURE() << "not a Responses SSE event: " << frame;
      continue;
    }
    SseEvent event{frame.substr(7, newline - 7), frame.substr(newline + 7)};
    const std::string head = R"({"type":")" + event.type + R"(","sequence_number":)" +
                             std::to_string(events.size()) + ",";
    EXPECT_TRUE(event.data.starts_with(head)) << event.data;
    events.push_back(std::move(event));
  }
  EXPECT_EQ(at, body.size()) << "trailing bytes: " << body.substr(at);
  return events;
}

std::vector<std::string> types_of(const std::vector<SseEvent>& events) {
  std::vector<std::string> types;
  for (const SseEvent& event : events) types.push_back(event.type);
  return types;
}

constexpr const char* kUsageOfHello =
    R"("usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":0},)"
    R"("output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":10})";

TEST_F(ResponsesTest, NonStreamedResponse) {
  const Response response = post(R"({"model":"fake","input":"hello"})");
  ASSERT_EQ(response.result_int(), 200) << response.body();
  EXPECT_EQ(response[http::field::content_type], "application/json");
  const std::string& body = response.body();
  EXPECT_TRUE(body.starts_with(R"({"id":"resp_)")) << body;
  EXPECT_EQ(response_id_of(body).size(), 5u + 32u);
  EXPECT_TRUE(contains(body, R"("object":"response",)")) << body;
  EXPECT_TRUE(contains(body, R"("status":"completed",)")) << body;
  EXPECT_TRUE(contains(body, R"("model":"fake","output":[{"type":"message","id":"msg_)")) << body;
  EXPECT_TRUE(contains(body, R"("status":"completed","role":"assistant","content":[)"
                             R"({"type":"output_text","text":"tok0 tok1 tok2 tok3 tok4 ",)"
                             R"("annotations":[],"logprobs":[]}]}],)"))
      << body;
  EXPECT_TRUE(contains(body, kUsageOfHello)) << body;
  EXPECT_TRUE(contains(body, R"("store":true,)")) << body;
}

TEST_F(ResponsesTest, MaxOutputTokensIsIncomplete) {
  const Response response = post(R"({"model":"fake","input":"hello","max_output_tokens":2})");
  ASSERT_EQ(response.result_int(), 200) << response.body();
  EXPECT_TRUE(contains(response.body(), R"("status":"incomplete",)")) << response.body();
  EXPECT_TRUE(contains(response.body(), R"("incomplete_details":{"reason":"max_output_tokens"},)"))
      << response.body();
  EXPECT_TRUE(contains(response.body(), R"("max_output_tokens":2,)"));

  const Response streamed =
      post(R"({"model":"fake","input":"hello","max_output_tokens":2,"stream":true})");
  const auto events = events_of(streamed.body());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, "response.incomplete");
  EXPECT_TRUE(
      contains(events.back().data, R"("incomplete_details":{"reason":"max_output_tokens"})"));
}

constexpr const char* kThinkAndCall =
    R"({"model":"fake","input":[{"role":"user","content":[{"type":"input_text",)"
    R"("text":"THINK then TOOL"}]}],"reasoning":{"effort":"low"},)"
    R"("tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}},)"
    R"({"type":"web_search"}])";

TEST_F(ResponsesTest, ReasoningTextAndFunctionCall) {
  const Response whole = post(std::string(kThinkAndCall) + "}");
  ASSERT_EQ(whole.result_int(), 200) << whole.body();
  const std::string& body = whole.body();
  EXPECT_TRUE(contains(body, R"("output":[{"type":"reasoning","id":"rs_)")) << body;
  EXPECT_TRUE(contains(body, R"("summary":[],"content":[{"type":"reasoning_text",)"
                             R"("text":"think0 think1 "}]},{"type":"message")"))
      << body;
  EXPECT_TRUE(contains(body, R"("text":"tok2 tok3 tok4 ")")) << body;
  EXPECT_TRUE(contains(body, R"({"type":"function_call","id":"fc_fake0","status":"completed",)"
                             R"("call_id":"call_fake0","name":"get_weather",)"
                             R"("arguments":"{\"city\":\"Paris\"}"}],)"))
      << body;
  EXPECT_TRUE(contains(body, R"("reasoning":{"effort":"low","summary":null},)")) << body;
  // Only the function tool is in effect, and echoed.
  EXPECT_TRUE(contains(body, R"("tools":[{"type":"function","name":"get_weather",)"
                             R"("parameters":{"type":"object"}}],)"))
      << body;

  const Response streamed = post(std::string(kThinkAndCall) + R"(,"stream":true})");
  ASSERT_EQ(streamed.result_int(), 200);
  EXPECT_EQ(streamed[http::field::content_type], "text/event-stream");
  const auto events = events_of(streamed.body());
  EXPECT_EQ(
      types_of(events),
      (std::vector<std::string>{
          "response.created", "response.in_progress",
          // reasoning
          "response.output_item.added", "response.content_part.added",
          "response.reasoning_text.delta", "response.reasoning_text.delta",
          "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
          // message
          "response.output_item.added", "response.content_part.added", "response.output_text.delta",
          "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
          "response.content_part.done", "response.output_item.done",
          // function call
          "response.output_item.added", "response.function_call_arguments.delta",
          "response.function_call_arguments.done", "response.output_item.done",
          "response.completed"}))
      << streamed.body();
  ASSERT_EQ(events.size(), 22u);
  EXPECT_TRUE(contains(events[0].data, R"("status":"in_progress",)"));
  EXPECT_TRUE(contains(events[4].data, R"("output_index":0,"content_index":0,"delta":"think0 "})"));
  EXPECT_TRUE(contains(events[11].data, R"("output_index":1,"content_index":0,"delta":"tok2 ",)"));
  EXPECT_TRUE(contains(events[19].data,
                       R"("item_id":"fc_fake0","output_index":2,)"
                       R"("name":"get_weather","arguments":"{\"city\":\"Paris\"}"})"));
  EXPECT_TRUE(contains(events[21].data, R"("status":"completed",)"));
  EXPECT_TRUE(contains(events[21].data, R"("call_id":"call_fake0")"));
}

TEST_F(ResponsesTest, CachedTokensInUsage) {
  const Response response = post(R"({"model":"fake","input":"CACHED"})");
  ASSERT_EQ(response.result_int(), 200) << response.body();
  EXPECT_TRUE(contains(response.body(), R"("usage":{"input_tokens":6,"input_tokens_details":)"
                                        R"({"cached_tokens":3},"output_tokens":5,)"))
      << response.body();
}

TEST_F(ResponsesTest, FailureMidStreamIsResponseFailed) {
  const Response streamed = post(R"({"model":"fake","input":"FAIL","stream":true})");
  ASSERT_EQ(streamed.result_int(), 200);
  const auto events = events_of(streamed.body());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, "response.failed");
  EXPECT_TRUE(contains(events.back().data, R"("status":"failed",)")) << events.back().data;
  EXPECT_TRUE(contains(events.back().data, R"("message":"the fake engine failed on purpose")"));
  EXPECT_FALSE(contains(streamed.body(), "[DONE]"));

  const Response whole = post(R"({"model":"fake","input":"FAIL"})");
  EXPECT_EQ(whole.result_int(), 500);
  EXPECT_TRUE(contains(whole.body(), R"({"error":{"message":"the fake engine failed on purpose")"));
}

// The follow-up's prompt is the new instructions, the stored conversation (input and answer),
// then the new input; the old instructions are not carried over, as in OpenAI's API.
TEST_F(ResponsesTest, PreviousResponseIdContinuesTheConversation) {
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed first turn" : "non-streamed first turn");
    const Response first =
        post(std::string(R"({"model":"fake","instructions":"sys","input":"hello","stream":)") +
             (stream ? "true" : "false") + "}");
    ASSERT_EQ(first.result_int(), 200) << first.body();
    const std::string id = response_id_of(first.body());
    ASSERT_FALSE(id.empty()) << first.body();

    const Response second = post(R"({"model":"fake","instructions":"sys2","input":"more",)"
                                 R"("previous_response_id":")" +
                                 id + R"("})");
    ASSERT_EQ(second.result_int(), 200) << second.body();
    EXPECT_TRUE(contains(second.body(), R"("previous_response_id":")" + id + "\""));
    const std::vector<api::ChatMessage> messages = fake_->last_chat_messages();
    ASSERT_EQ(messages.size(), 4u);
    EXPECT_EQ(messages[0].role, api::ChatRole::system);
    EXPECT_EQ(messages[0].content, "sys2");
    EXPECT_EQ(messages[1].role, api::ChatRole::user);
    EXPECT_EQ(messages[1].content, "hello");
    EXPECT_EQ(messages[2].role, api::ChatRole::assistant);
    EXPECT_EQ(messages[2].content, "tok0 tok1 tok2 tok3 tok4 ");
    EXPECT_EQ(messages[3].content, "more");

    // A third turn continues the second, so the whole history comes along.
    const Response third = post(R"({"model":"fake","input":"again","previous_response_id":")" +
                                response_id_of(second.body()) + R"("})");
    ASSERT_EQ(third.result_int(), 200) << third.body();
    EXPECT_EQ(fake_->last_chat_messages().size(), 5u);
  }
}

// A function call's output continues the conversation by call_id, as Codex sends it.
TEST_F(ResponsesTest, FunctionCallOutputFollowUp) {
  const Response first = post(std::string(kThinkAndCall) + "}");
  ASSERT_EQ(first.result_int(), 200) << first.body();
  const Response second = post(
      R"({"model":"fake","previous_response_id":")" + response_id_of(first.body()) +
      R"(","input":[{"type":"function_call_output","call_id":"call_fake0","output":"sunny"}]})");
  ASSERT_EQ(second.result_int(), 200) << second.body();
  const std::vector<api::ChatMessage> messages = fake_->last_chat_messages();
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[1].role, api::ChatRole::assistant);
  EXPECT_EQ(messages[1].reasoning_content, "think0 think1 ");
  EXPECT_TRUE(contains(tern::testing::compact_json(messages[1].tool_calls), R"("id":"call_fake0")"))
      << tern::testing::compact_json(messages[1].tool_calls);
  EXPECT_EQ(messages[2].role, api::ChatRole::tool);
  EXPECT_EQ(messages[2].tool_call_id, "call_fake0");
  EXPECT_EQ(messages[2].content, "sunny");
}

TEST_F(ResponsesTest, GetAndDeleteStoredResponses) {
  const Response created = post(R"({"model":"fake","input":"hello"})");
  ASSERT_EQ(created.result_int(), 200);
  const std::string id = response_id_of(created.body());

  const Response got = send(http::verb::get, "/v1/responses/" + id);
  ASSERT_EQ(got.result_int(), 200) << got.body();
  EXPECT_EQ(got.body(), created.body());

  const Response deleted = send(http::verb::delete_, "/v1/responses/" + id);
  ASSERT_EQ(deleted.result_int(), 200) << deleted.body();
  EXPECT_EQ(deleted.body(), R"({"id":")" + id + R"(","object":"response.deleted","deleted":true})");

  const Response gone = send(http::verb::get, "/v1/responses/" + id);
  EXPECT_EQ(gone.result_int(), 404);
  EXPECT_TRUE(contains(gone.body(), R"("type":"invalid_request_error")")) << gone.body();
  EXPECT_TRUE(contains(gone.body(), id));
  EXPECT_EQ(send(http::verb::delete_, "/v1/responses/" + id).result_int(), 404);

  const Response unknown =
      post(R"({"model":"fake","input":"x","previous_response_id":"resp_nope"})");
  EXPECT_EQ(unknown.result_int(), 404);
  EXPECT_TRUE(contains(unknown.body(), R"("param":"previous_response_id")")) << unknown.body();

  // The streamed answer is stored as its response.completed says.
  const Response streamed = post(R"({"model":"fake","input":"hello","stream":true})");
  const auto events = events_of(streamed.body());
  ASSERT_FALSE(events.empty());
  const std::string streamed_id = response_id_of(streamed.body());
  const std::string& completed = events.back().data;
  const std::string prefix = R"("response":)";
  const std::string stored = completed.substr(completed.find(prefix) + prefix.size());
  EXPECT_EQ(send(http::verb::get, "/v1/responses/" + streamed_id).body() + "}", stored);
}

TEST_F(ResponsesTest, StoreFalseKeepsNothing) {
  const Response created = post(R"({"model":"fake","input":"hello","store":false})");
  ASSERT_EQ(created.result_int(), 200);
  EXPECT_TRUE(contains(created.body(), R"("store":false,)"));
  const std::string id = response_id_of(created.body());
  EXPECT_EQ(send(http::verb::get, "/v1/responses/" + id).result_int(), 404);
  const Response follow_up =
      post(R"({"model":"fake","input":"x","previous_response_id":")" + id + R"("})");
  EXPECT_EQ(follow_up.result_int(), 404);
}

// What Codex sends (include, store false, non-function tools, reasoning summary, text
// verbosity, prompt_cache_key) is accepted; a forced tool call is a 400 naming the field.
TEST_F(ResponsesTest, CodexRequestsAndErrors) {
  const Response codex = post(
      R"({"model":"fake","instructions":"You are Codex.","stream":true,"store":false,)"
      R"("input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"ls"}]}],)"
      R"("tools":[{"type":"function","name":"shell","parameters":{"type":"object"}},)"
      R"({"type":"local_shell"},{"type":"web_search"}],"tool_choice":"auto",)"
      R"("parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},)"
      R"("include":["reasoning.encrypted_content"],"prompt_cache_key":"c1",)"
      R"("text":{"verbosity":"medium"}})");
  ASSERT_EQ(codex.result_int(), 200) << codex.body();
  EXPECT_EQ(events_of(codex.body()).back().type, "response.completed");

  const Response forced =
      post(R"({"model":"fake","input":"hi","tool_choice":{"type":"allowed_tools","tools":[]}})");
  EXPECT_EQ(forced.result_int(), 400);
  EXPECT_TRUE(contains(forced.body(), R"("param":"tool_choice","code":"unsupported_parameter")"))
      << forced.body();
  const Response image = post(
      R"({"model":"fake","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]})");
  EXPECT_EQ(image.result_int(), 400);
  EXPECT_TRUE(contains(image.body(), R"("param":"input[0].content[0].type")")) << image.body();
  const Response model = post(R"({"model":"nope","input":"hi"})");
  EXPECT_EQ(model.result_int(), 404);
  EXPECT_EQ(send(http::verb::get, "/v1/responses").result_int(), 405);
}

// With API keys, a stored response belongs to the key that made it: GET, DELETE and
// previous_response_id with another key are the 404 of an id that never existed. The key is
// one identity whichever header carries it.
class ResponsesWithKeysTest : public ResponsesTest {
 protected:
  void SetUp() override {
    ServerConfig config;
    config.api_keys = {"key-alice", "key-mallory"};
    start(config);
  }
  using Headers = std::vector<std::pair<std::string, std::string>>;
  static Headers bearer(std::string key) { return {{"Authorization", "Bearer " + key}}; }
};

TEST_F(ResponsesWithKeysTest, AnotherKeySeesNothing) {
  const Response created = send(http::verb::post, "/v1/responses",
                                R"({"model":"fake","instructions":"secret instructions",)"
                                R"("metadata":{"note":"private"},"input":"hello"})",
                                bearer("key-alice"));
  ASSERT_EQ(created.result_int(), 200) << created.body();
  const std::string id = response_id_of(created.body());

  const Response never = send(http::verb::get, "/v1/responses/resp_never", "", bearer("key-alice"));
  ASSERT_EQ(never.result_int(), 404);
  const Response stolen = send(http::verb::get, "/v1/responses/" + id, "", bearer("key-mallory"));
  EXPECT_EQ(stolen.result_int(), 404);
  EXPECT_FALSE(contains(stolen.body(), "secret")) << stolen.body();
  // The same answer as for an id that never existed, but for the id itself.
  std::string never_body = never.body();
  never_body.replace(never_body.find("resp_never"), 10, id);
  EXPECT_EQ(stolen.body(), never_body);

  const Response continued =
      send(http::verb::post, "/v1/responses",
           R"({"model":"fake","input":"x","previous_response_id":")" + id + R"("})",
           bearer("key-mallory"));
  EXPECT_EQ(continued.result_int(), 404);
  EXPECT_TRUE(contains(continued.body(), R"("param":"previous_response_id")"));
  EXPECT_EQ(
      send(http::verb::delete_, "/v1/responses/" + id, "", bearer("key-mallory")).result_int(),
      404);

  // The owner, through either header, still has it.
  const Response mine =
      send(http::verb::get, "/v1/responses/" + id, "", {{"x-api-key", "key-alice"}});
  EXPECT_EQ(mine.result_int(), 200) << mine.body();
  EXPECT_TRUE(contains(mine.body(), "secret instructions"));
  EXPECT_EQ(send(http::verb::post, "/v1/responses",
                 R"({"model":"fake","input":"x","previous_response_id":")" + id + R"("})",
                 {{"x-api-key", "key-alice"}})
                .result_int(),
            200);
  EXPECT_EQ(send(http::verb::delete_, "/v1/responses/" + id, "", bearer("key-alice")).result_int(),
            200);
}

// One key's 1,000 stored responses evict only its own: the other key's response and its
// follow-up survive the flood, and /metrics shows the store and its evictions.
TEST_F(ResponsesWithKeysTest, AFloodFromOneKeyLeavesTheOthersResponses) {
  const Response kept = send(http::verb::post, "/v1/responses",
                             R"({"model":"fake","input":"keep me"})", bearer("key-alice"));
  ASSERT_EQ(kept.result_int(), 200);
  const std::string id = response_id_of(kept.body());
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(
        send(http::verb::post, "/v1/responses",
             R"({"model":"fake","max_output_tokens":1,"input":"flood"})", bearer("key-mallory"))
            .result_int(),
        200);
  }
  EXPECT_EQ(send(http::verb::get, "/v1/responses/" + id, "", bearer("key-alice")).result_int(),
            200);
  EXPECT_EQ(send(http::verb::post, "/v1/responses",
                 R"({"model":"fake","input":"x","previous_response_id":")" + id + R"("})",
                 bearer("key-alice"))
                .result_int(),
            200);
  const std::string metrics = send(http::verb::get, "/metrics").body();
  EXPECT_TRUE(contains(metrics, "tern_responses_store_entries 252\n")) << metrics;
  EXPECT_TRUE(contains(metrics, R"(tern_responses_store_evictions_total{reason="key_share"} 750)"))
      << metrics;
  EXPECT_TRUE(contains(metrics, "tern_responses_store_bytes ")) << metrics;
}

// Metadata is bounded as OpenAI bounds it; a 7.9 MB object was kept whole before.
TEST_F(ResponsesTest, OversizedMetadataIsRefused) {
  const Response huge = post(R"({"model":"fake","input":"x","metadata":{"k":")" +
                             std::string(7900 << 10, 'v') + R"("}})");
  EXPECT_EQ(huge.result_int(), 400);
  EXPECT_TRUE(contains(huge.body(), R"("param":"metadata.k")")) << huge.body().substr(0, 300);
}

}  // namespace
}  // namespace tern::service
