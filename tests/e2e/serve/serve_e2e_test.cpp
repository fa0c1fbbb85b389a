// The real server over loopback: Server + EngineModelService over a ModelRegistry holding
// TinyStories (in process, so the test can watch the engine), and the `tern serve` binary itself.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>
#include <boost/beast/http.hpp>

#include "engine/chat/chat_template.h"
#include "engine/registry.h"
#include "service/engine_model_service.h"
#include "service/server.h"
#include "tests/support/http_client.h"
#include "tests/support/serve_process.h"
#include "tests/support/shared_data.h"

namespace tern::service {
namespace {

namespace http = boost::beast::http;
using Response = http::response<http::string_body>;
using namespace std::chrono_literals;

constexpr const char* kModelDir = "models/tinystories-656k";
constexpr const char* kReference = "reference/tinystories-656k.greedy.jsonl";

using Client = tern::testing::HttpClient;
using tern::testing::sse_data;

simdjson::dom::element parse(simdjson::dom::parser& parser, const std::string& json) {
  return tern::testing::parse_json(parser, json);
}

// One registry for the suite: TinyStories as "tinystories" (alias "ts"), the same weights with
// a template that forbids a conversation without a system message as "strict", and a missing
// path that must not stop the others.
class ServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto model_dir = tern::testing::shared_path(kModelDir);
    if (!std::filesystem::exists(model_dir)) return;
    template_path_ = std::filesystem::temp_directory_path() /
                     fmt::format("tern-serve-test-{}.jinja", ::getpid());
    std::ofstream(template_path_)
        << "{% if messages[0]['role'] != 'system' %}"
           "{{ raise_exception('Conversations must start with a system message') }}{% endif %}"
           "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}";
    engine::ModelSpec spec;
    spec.name = "tinystories";
    spec.path = model_dir.string();
    spec.aliases = {"ts"};
    spec.max_num_seqs = 8;
    spec.max_num_batched_tokens = 256;
    spec.kv_cache_type = engine::KvCacheType::f32;  // the reference greedy ids are f32
    spec.kv_cache_bytes = 64ull << 20;
    engine::ModelSpec strict = spec;
    strict.name = "strict";
    strict.aliases.clear();
    strict.chat_template = template_path_.string();
    engine::ModelSpec missing;
    missing.name = "missing";
    missing.path = "/nonexistent/model.gguf";
    std::vector<engine::ModelSpec> specs{spec, strict, missing};
    // The same weights behind Qwen3's and Llama 3's own chat templates, for the tool loops.
    for (const char* name : {"qwen3", "llama3"}) {
      const auto config =
          tern::testing::shared_path(fmt::format("tokenizers/{}/tokenizer_config.json", name));
      if (!std::filesystem::exists(config)) continue;
      std::ifstream in(config);
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      auto source = engine::chat::chat_template_from_tokenizer_config(text);
      ASSERT_TRUE(source.ok()) << source.error().message;
      const auto path = std::filesystem::temp_directory_path() /
                        fmt::format("tern-serve-test-{}-{}.jinja", ::getpid(), name);
      std::ofstream(path) << *source;
      real_template_paths_.push_back(path);
      engine::ModelSpec real = spec;
      real.name = fmt::format("{}-template", name);
      real.aliases.clear();
      real.chat_template = path.string();
      specs.push_back(real);
    }
    registry_ = new engine::ModelRegistry(specs, {2});
    ASSERT_TRUE(registry_->wait_until_loaded().ok());
  }
  static void TearDownTestSuite() {
    delete registry_;
    registry_ = nullptr;
    std::filesystem::remove(template_path_);
    for (const auto& path : real_template_paths_) std::filesystem::remove(path);
  }

  void SetUp() override {
    if (registry_ == nullptr) {
      GTEST_SKIP() << "needs " << tern::testing::shared_path(kModelDir).string()
                   << " (../shared is absent or incomplete)";
    }
    service_ = std::make_unique<EngineModelService>(*registry_);
    ServerConfig config;
    config.host = "127.0.0.1";
    config.port = 0;
    config.io_threads = 1;
    server_ = std::make_unique<Server>(config, *service_, metrics_, Server::Options{false, 2});
    ASSERT_TRUE(server_->start().ok());
    thread_ = std::thread([this] { server_->run(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  Client client() { return Client(server_->port()); }
  static const engine::ServedModel& model() { return *registry_->find("tinystories"); }

  // The engine publishes its counters after each loop; wait until the pool is whole again.
  static bool engine_idle() {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      const engine::EngineStats stats = model().engine->stats();
      if (stats.running == 0 && stats.waiting == 0 && stats.kv_free_blocks == stats.kv_blocks) {
        return true;
      }
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }

  static inline engine::ModelRegistry* registry_ = nullptr;
  static inline std::filesystem::path template_path_;
  static inline std::vector<std::filesystem::path> real_template_paths_;
  ServiceMetrics metrics_;
  std::unique_ptr<EngineModelService> service_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

struct ReferenceCase {
  std::vector<std::int32_t> prompt_ids;
  std::vector<std::int32_t> greedy_ids;
  std::string greedy_text;  // the continuation as HF decodes it after the prompt
};

std::vector<ReferenceCase> reference_cases() {
  std::vector<ReferenceCase> cases;
  std::ifstream file(tern::testing::shared_path(kReference));
  simdjson::dom::parser parser;
  for (std::string line; std::getline(file, line);) {
    simdjson::dom::element row = parse(parser, line);
    ReferenceCase item;
    for (std::int64_t id : row["prompt_ids"].get_array())
      item.prompt_ids.push_back(static_cast<std::int32_t>(id));
    for (std::int64_t id : row["greedy_ids"].get_array())
      item.greedy_ids.push_back(static_cast<std::int32_t>(id));
    item.greedy_text = std::string(std::string_view(row["greedy_text"]));
    cases.push_back(std::move(item));
  }
  return cases;
}

std::string id_list(const std::vector<std::int32_t>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

TEST_F(ServeTest, GreedyCompletionsEqualTheReference) {
  TERN_REQUIRE_SHARED(reference, kReference);
  const std::vector<ReferenceCase> cases = reference_cases();
  ASSERT_EQ(cases.size(), 8u);
  std::string prompts = "[";
  for (std::size_t i = 0; i < cases.size(); ++i)
    prompts += (i ? "," : "") + id_list(cases[i].prompt_ids);
  prompts += "]";
  Client c = client();
  simdjson::dom::parser parser;
  // All eight prompts in one request (choices numbered by prompt), then the first one alone.
  const Response all = c.post(
      "/v1/completions",
      fmt::format(R"({{"model":"ts","prompt":{},"max_tokens":48,"temperature":0}})", prompts));
  ASSERT_EQ(all.result_int(), 200) << all.body();
  simdjson::dom::element body = parse(parser, all.body());
  simdjson::dom::array choices = body["choices"].get_array();
  ASSERT_EQ(choices.size(), cases.size());
  std::size_t index = 0;
  for (simdjson::dom::element choice : choices) {
    EXPECT_EQ(std::int64_t(choice["index"]), static_cast<std::int64_t>(index));
    // greedy_text, not a decode of greedy_ids alone: a continuation keeps the leading space
    // that SentencePiece drops at the start of a sequence (" always" after "Mom said").
    EXPECT_EQ(std::string(std::string_view(choice["text"])), cases[index].greedy_text)
        << "prompt " << index;
    EXPECT_EQ(std::string_view(choice["finish_reason"]), "length");
    ++index;
  }
  EXPECT_EQ(std::int64_t(body["usage"]["completion_tokens"]), 48 * 8);
  EXPECT_EQ(std::string_view(body["model"]), "ts");

  const Response one =
      c.post("/v1/completions",
             fmt::format(R"({{"prompt":{},"max_tokens":48,"temperature":0,"logprobs":1}})",
                         id_list(cases[0].prompt_ids)));
  ASSERT_EQ(one.result_int(), 200) << one.body();
  simdjson::dom::element single = parse(parser, one.body());
  EXPECT_EQ(std::string_view(single["model"]), "tinystories");  // the default model
  simdjson::dom::element choice = single["choices"].at(0);
  EXPECT_EQ(std::string(std::string_view(choice["text"])), cases[0].greedy_text);
  EXPECT_EQ(choice["logprobs"]["tokens"].get_array().size(), 48u);
}

TEST_F(ServeTest, StreamedChatHasOpenAiChunkSequence) {
  Client c = client();
  c.send(
      http::verb::post, "/v1/chat/completions",
      R"({"model":"tinystories","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":12,"temperature":0,"stream":true,"stream_options":{"include_usage":true}})");
  const std::string raw = c.read_until(Client::kChunkedEnd);
  ASSERT_NE(raw.find("HTTP/1.1 200"), std::string::npos) << raw;
  EXPECT_NE(raw.find("Content-Type: text/event-stream"), std::string::npos) << raw;
  const std::vector<std::string> events = sse_data(raw);
  ASSERT_GE(events.size(), 4u) << raw;
  EXPECT_EQ(events.back(), "[DONE]");
  simdjson::dom::parser parser;
  std::string text;
  int finish_chunks = 0;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    simdjson::dom::element chunk = parse(parser, events[i]);
    EXPECT_EQ(std::string_view(chunk["object"]), "chat.completion.chunk");
    simdjson::dom::array choices = chunk["choices"].get_array();
    if (i + 2 == events.size()) {  // the usage chunk
      EXPECT_EQ(choices.size(), 0u);
      EXPECT_EQ(std::int64_t(chunk["usage"]["completion_tokens"]), 12);
      EXPECT_GT(std::int64_t(chunk["usage"]["prompt_tokens"]), 0);
      continue;
    }
    ASSERT_EQ(choices.size(), 1u) << events[i];
    simdjson::dom::element delta = choices.at(0)["delta"];
    if (i == 0) {
      EXPECT_EQ(std::string_view(delta["role"]), "assistant") << events[i];
    } else {
      EXPECT_TRUE(delta["role"].error() == simdjson::NO_SUCH_FIELD) << events[i];
    }
    std::string_view content;
    if (delta["content"].get(content) == simdjson::SUCCESS) text += content;
    if (!choices.at(0)["finish_reason"].is_null()) {
      ++finish_chunks;
      EXPECT_EQ(std::string_view(choices.at(0)["finish_reason"]), "length");
      EXPECT_EQ(i + 3, events.size()) << "the finish chunk comes just before usage";
    }
  }
  EXPECT_EQ(finish_chunks, 1);
  EXPECT_FALSE(text.empty());
}

// The real model through each door: one conversation, rendered by the same template, gives the
// same greedy text from chat completions, Anthropic's Messages and the Responses API.
TEST_F(ServeTest, EveryDoorGivesTheSameGreedyText) {
  Client c = client();
  simdjson::dom::parser parser;
  const Response chat = c.post(
      "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":12,"temperature":0})");
  ASSERT_EQ(chat.result_int(), 200) << chat.body();
  const std::string chat_text(
      std::string_view(parse(parser, chat.body())["choices"].at(0)["message"]["content"]));
  ASSERT_FALSE(chat_text.empty());

  const Response messages = c.post("/v1/messages?beta=true",
                                   R"({"model":"tinystories","max_tokens":12,"temperature":0,)"
                                   R"("messages":[{"role":"user","content":"Once upon a time"}]})");
  ASSERT_EQ(messages.result_int(), 200) << messages.body();
  simdjson::dom::element message = parse(parser, messages.body());
  EXPECT_EQ(std::string_view(message["type"]), "message");
  EXPECT_EQ(std::string_view(message["stop_reason"]), "max_tokens");
  EXPECT_EQ(std::string_view(message["content"].at(0)["text"]), chat_text);
  EXPECT_EQ(std::int64_t(message["usage"]["output_tokens"]), 12);

  const Response response = c.post(
      "/v1/responses", R"({"input":"Once upon a time","max_output_tokens":12,"temperature":0})");
  ASSERT_EQ(response.result_int(), 200) << response.body();
  simdjson::dom::element answer = parse(parser, response.body());
  EXPECT_EQ(std::string_view(answer["status"]), "incomplete");
  EXPECT_EQ(std::string_view(answer["output"].at(0)["content"].at(0)["text"]), chat_text);

  // A follow-up through previous_response_id renders the stored conversation first, so its
  // prompt starts with the first one's and the prefix cache serves those blocks.
  const std::string first_id{std::string_view(answer["id"])};
  const std::int64_t first_input_tokens = answer["usage"]["input_tokens"];
  const Response follow_up =
      c.post("/v1/responses",
             R"({"input":"And then the little dog ran to the park to play with a big red ball.",)"
             R"("max_output_tokens":4,"temperature":0,"previous_response_id":")" +
                 first_id + R"("})");
  ASSERT_EQ(follow_up.result_int(), 200) << follow_up.body();
  simdjson::dom::element second = parse(parser, follow_up.body());
  EXPECT_GT(std::int64_t(second["usage"]["input_tokens"]), first_input_tokens);
  EXPECT_GT(std::int64_t(second["usage"]["input_tokens_details"]["cached_tokens"]), 0)
      << follow_up.body();
}

// The second turn of a tool loop, as each door's clients send it, on Qwen3's and Llama 3's own
// templates: it was a 400 ("argument of type 'NoneType' is not iterable") on Qwen3's template
// for all three doors. Llama 3's template never reads tools, so its turns come without them.
TEST_F(ServeTest, ToolLoopSecondTurnRunsOnRealTemplates) {
  for (const char* model : {"qwen3-template", "llama3-template"}) {
    if (registry_->find(model) == nullptr) GTEST_SKIP() << "needs ../shared/tokenizers";
  }
  constexpr const char* kParameters =
      R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})";
  struct Turn {
    const char* target;
    std::string tools;
    std::string conversation;
  };
  const std::vector<Turn> turns{
      {"/v1/chat/completions",
       fmt::format(R"("tools":[{{"type":"function","function":{{"name":"get_weather",)"
                   R"("parameters":{}}}}}],)",
                   kParameters),
       R"("messages":[{"role":"user","content":"Weather in Paris?"},)"
       R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
       R"("function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},)"
       R"({"role":"tool","tool_call_id":"call_1","content":"21 C"}])"},
      {"/v1/responses",
       fmt::format(R"("tools":[{{"type":"function","name":"get_weather","parameters":{}}}],)",
                   kParameters),
       R"("input":[{"role":"user","content":"Weather in Paris?"},)"
       R"({"type":"function_call","call_id":"call_1","name":"get_weather",)"
       R"("arguments":"{\"city\":\"Paris\"}"},)"
       R"({"type":"function_call_output","call_id":"call_1","output":"21 C"}])"},
      {"/v1/messages",
       fmt::format(R"("tools":[{{"name":"get_weather","input_schema":{}}}],)", kParameters),
       R"("messages":[{"role":"user","content":"Weather in Paris?"},)"
       R"({"role":"assistant","content":[{"type":"tool_use","id":"toolu_1",)"
       R"("name":"get_weather","input":{"city":"Paris"}}]},)"
       R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",)"
       R"("content":"21 C"}]}])"},
  };
  Client c = client();
  for (const char* model : {"qwen3-template", "llama3-template"}) {
    const bool tools = std::string_view(model) == "qwen3-template";
    for (const Turn& turn : turns) {
      const std::string body =
          fmt::format(R"({{"model":"{}","max_tokens":4,"max_output_tokens":4,{}{}}})", model,
                      tools ? turn.tools : "", turn.conversation);
      const Response response = c.post(turn.target, body);
      EXPECT_EQ(response.result_int(), 200)
          << model << " " << turn.target << ": " << response.body();
    }
  }
}

// A prompt far past the context is refused once that is known, after tokenizing about the
// context's worth of it: the error says "at least", and /tokenize and count_tokens are bounded
// by the context the same way (they tokenized all of it and answered 200 before).
TEST_F(ServeTest, HugePromptIsRefusedWithoutTokenizingItAll) {
  std::string words;
  while (words.size() < (2u << 20)) words += "Once upon a time there was a little dog. ";
  const int context = model().context_length;
  Client c = client();
  simdjson::dom::parser parser;
  const Response chat = c.post(
      "/v1/chat/completions",
      R"({"model":"ts","max_tokens":8,"messages":[{"role":"user","content":")" + words + R"("}]})");
  ASSERT_EQ(chat.result_int(), 400) << chat.body().substr(0, 500);
  simdjson::dom::element error = parse(parser, chat.body())["error"];
  EXPECT_EQ(std::string_view(error["code"]), "context_length_exceeded");
  EXPECT_EQ(std::string_view(error["param"]), "messages");
  const std::string message{std::string_view(error["message"])};
  EXPECT_NE(message.find(fmt::format("maximum context length is {} tokens", context)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("at least"), std::string::npos) << message;

  const Response completion =
      c.post("/v1/completions", R"({"model":"ts","max_tokens":8,"prompt":")" + words + R"("})");
  ASSERT_EQ(completion.result_int(), 400) << completion.body().substr(0, 500);
  EXPECT_NE(completion.body().find("at least"), std::string::npos) << completion.body();

  const Response tokenized = c.post("/tokenize", R"({"model":"ts","prompt":")" + words + R"("})");
  ASSERT_EQ(tokenized.result_int(), 400) << tokenized.body().substr(0, 500);
  EXPECT_NE(tokenized.body().find("context_length_exceeded"), std::string::npos);

  const Response counted =
      c.post("/v1/messages/count_tokens",
             R"({"model":"ts","messages":[{"role":"user","content":")" + words + R"("}]})");
  ASSERT_EQ(counted.result_int(), 400) << counted.body().substr(0, 500);
  EXPECT_NE(counted.body().find("at least"), std::string::npos) << counted.body();

  // A prompt that fits is still counted exactly.
  const Response small = c.post("/tokenize", R"({"model":"ts","prompt":"Once upon a time"})");
  ASSERT_EQ(small.result_int(), 200) << small.body();
  EXPECT_EQ(std::int64_t(parse(parser, small.body())["count"]),
            static_cast<std::int64_t>(model().tokenizer->encode("Once upon a time", true).size()));
}

TEST_F(ServeTest, RepeatedPromptReportsCachedTokens) {
  Client c = client();
  const std::string body =
      R"({"model":"tinystories","prompt":"Once upon a time there was a little girl named Lily. She loved to play outside in the park with her friends and her dog.","max_tokens":4,"temperature":0})";
  simdjson::dom::parser parser;
  const Response first = c.post("/v1/completions", body);
  ASSERT_EQ(first.result_int(), 200) << first.body();
  const Response second = c.post("/v1/completions", body);
  ASSERT_EQ(second.result_int(), 200) << second.body();
  simdjson::dom::element usage = parse(parser, second.body())["usage"];
  EXPECT_GT(std::int64_t(usage["prompt_tokens_details"]["cached_tokens"]), 0) << second.body();
  EXPECT_LE(std::int64_t(usage["prompt_tokens_details"]["cached_tokens"]),
            std::int64_t(usage["prompt_tokens"]));
}

// echo puts the prompt before the text; text_offset then counts from the start of that text,
// so each token's offset points at the token. It used to start at 0 without streaming.
TEST_F(ServeTest, EchoedLogprobOffsetsPointIntoTheText) {
  Client c = client();
  const Response response = c.post(
      "/v1/completions",
      R"({"model":"tinystories","prompt":"Once upon","max_tokens":3,"echo":true,"logprobs":1,)"
      R"("temperature":0})");
  ASSERT_EQ(response.result_int(), 200) << response.body();
  simdjson::dom::parser parser;
  simdjson::dom::element choice = parse(parser, response.body())["choices"].at(0);
  const std::string text{std::string_view(choice["text"])};
  ASSERT_TRUE(text.starts_with("Once upon")) << text;
  simdjson::dom::array tokens = choice["logprobs"]["tokens"];
  simdjson::dom::array offsets = choice["logprobs"]["text_offset"];
  ASSERT_EQ(tokens.size(), 3u);
  ASSERT_EQ(offsets.size(), 3u);
  EXPECT_EQ(std::int64_t(offsets.at(0)), 9);  // "Once upon"
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string_view token(tokens.at(i));
    const auto offset = static_cast<std::size_t>(std::int64_t(offsets.at(i)));
    EXPECT_EQ(text.substr(offset, token.size()), token) << "token " << i << " in " << text;
  }
}

TEST_F(ServeTest, ErrorsAreOpenAiShaped) {
  Client c = client();
  const Response unknown = c.post(
      "/v1/chat/completions", R"({"model":"nope","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(unknown.result_int(), 404);
  EXPECT_NE(unknown.body().find(R"("code":"model_not_found")"), std::string::npos)
      << unknown.body();

  std::string long_prompt;
  for (int i = 0; i < 300; ++i) long_prompt += "the little dog ran ";
  const Response too_long =
      c.post("/v1/completions", fmt::format(R"({{"prompt":"{}","max_tokens":4}})", long_prompt));
  EXPECT_EQ(too_long.result_int(), 400);
  EXPECT_NE(too_long.body().find(R"("code":"context_length_exceeded")"), std::string::npos)
      << too_long.body();
  EXPECT_NE(too_long.body().find("maximum context length is 512 tokens"), std::string::npos)
      << too_long.body();
  EXPECT_NE(too_long.body().find(R"("param":"prompt")"), std::string::npos) << too_long.body();

  const Response too_many = c.post("/v1/completions", R"({"prompt":"Once","max_tokens":600})");
  EXPECT_EQ(too_many.result_int(), 400);
  EXPECT_NE(too_many.body().find("context_length_exceeded"), std::string::npos) << too_many.body();

  const Response bad_top_p = c.post("/v1/completions", R"({"prompt":"Once","top_p":1.5})");
  EXPECT_EQ(bad_top_p.result_int(), 400);
  EXPECT_NE(bad_top_p.body().find(R"("param":"top_p")"), std::string::npos) << bad_top_p.body();

  const Response bad_id = c.post("/v1/completions", R"({"prompt":[1,99999],"max_tokens":2})");
  EXPECT_EQ(bad_id.result_int(), 400) << bad_id.body();

  const Response broken = c.post(
      "/v1/chat/completions", R"({"model":"missing","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(broken.result_int(), 503) << broken.body();
}

TEST_F(ServeTest, TemplateRaiseIsAClientError) {
  Client c = client();
  const Response refused =
      c.post("/v1/chat/completions",
             R"({"model":"strict","messages":[{"role":"user","content":"hi"}],"max_tokens":2})");
  EXPECT_EQ(refused.result_int(), 400) << refused.body();
  EXPECT_NE(refused.body().find("Conversations must start with a system message"),
            std::string::npos)
      << refused.body();
  EXPECT_NE(refused.body().find(R"("param":"messages")"), std::string::npos) << refused.body();
  const Response accepted = c.post(
      "/v1/chat/completions",
      R"({"model":"strict","messages":[{"role":"system","content":"Tell a story."},{"role":"user","content":"hi"}],"max_tokens":2})");
  EXPECT_EQ(accepted.result_int(), 200) << accepted.body();
}

// TinyStories has no chat template, so the ChatML fallback renders an OpenAI client's tool
// round trip (content null, arguments as a JSON string); "strict"'s template never reads
// `tools`, so tools sent to it are refused rather than dropped.
TEST_F(ServeTest, ToolHistoryOnTheFallbackAndToolsTheTemplateCannotRender) {
  Client c = client();
  const std::string tools =
      R"([{"type":"function","function":{"name":"get_weather","parameters":{}}}])";
  const Response rendered = c.post("/tokenize", fmt::format(R"({{"model":"ts","tools":{},
      "messages":[{{"role":"user","content":"Weather?"}},
        {{"role":"assistant","content":null,"tool_calls":[{{"id":"c1","type":"function",
          "function":{{"name":"get_weather","arguments":"{{\"city\":\"Paris\"}}"}}}}]}},
        {{"role":"tool","tool_call_id":"c1","content":"21"}}]}})",
                                                            tools));
  ASSERT_EQ(rendered.result_int(), 200) << rendered.body();
  simdjson::dom::parser parser;
  std::vector<std::int32_t> ids;
  for (std::int64_t id : parse(parser, rendered.body())["tokens"].get_array()) {
    ids.push_back(static_cast<std::int32_t>(id));
  }
  const Response prompt = c.post("/detokenize", fmt::format(R"({{"tokens":{}}})", id_list(ids)));
  ASSERT_EQ(prompt.result_int(), 200) << prompt.body();
  const std::string text(std::string_view(parse(parser, prompt.body())["prompt"]));
  // TinyStories' vocabulary has no '{' or '/' (they decode as <unk>), so only the parts
  // without them are checked here; the exact prompt is checked in tern_service_tests.
  for (std::string_view part :
       {"<|im_start|>assistant\n<tool_call>\n", R"("name": "get_weather", "arguments": )",
        R"("city": "Paris")", "<|im_start|>user\n<tool_response>\n21\n"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " not in\n" << text;
  }

  const Response chat = c.post("/v1/chat/completions", fmt::format(R"({{"model":"ts","tools":{},
      "messages":[{{"role":"user","content":"Weather?"}},
        {{"role":"assistant","content":null,"tool_calls":[{{"id":"c1","type":"function",
          "function":{{"name":"get_weather","arguments":"{{}}"}}}}]}},
        {{"role":"tool","tool_call_id":"c1","content":"21"}}],"max_tokens":2}})",
                                                                   tools));
  EXPECT_EQ(chat.result_int(), 200) << chat.body();

  const Response refused = c.post(
      "/v1/chat/completions",
      fmt::format(R"({{"model":"strict","tools":{},"messages":[{{"role":"system","content":"S"}},
          {{"role":"user","content":"hi"}}],"max_tokens":2}})",
                  tools));
  EXPECT_EQ(refused.result_int(), 400) << refused.body();
  EXPECT_NE(refused.body().find(R"("param":"tools")"), std::string::npos) << refused.body();
  EXPECT_NE(refused.body().find("never reads `tools`"), std::string::npos) << refused.body();
}

TEST_F(ServeTest, DisconnectMidStreamFreesTheEngine) {
  ASSERT_TRUE(engine_idle());
  {
    Client c = client();
    c.send(
        http::verb::post, "/v1/completions",
        R"({"prompt":"Once upon a time","max_tokens":400,"temperature":1,"ignore_eos":true,"stream":true})");
    const std::string raw = c.read_until("\"text\"");
    ASSERT_NE(raw.find("HTTP/1.1 200"), std::string::npos) << raw;
    EXPECT_GE(model().engine->stats().running + model().engine->stats().waiting, 0);
    c.close();
  }
  EXPECT_TRUE(engine_idle()) << "running " << model().engine->stats().running << ", free "
                             << model().engine->stats().kv_free_blocks << " of "
                             << model().engine->stats().kv_blocks;
}

TEST_F(ServeTest, ModelsTokenizeAndReady) {
  Client c = client();
  EXPECT_EQ(c.get("/ready").result_int(), 200);
  const Response models = c.get("/v1/models");
  ASSERT_EQ(models.result_int(), 200);
  EXPECT_NE(models.body().find(R"("id":"tinystories")"), std::string::npos) << models.body();
  EXPECT_NE(models.body().find(R"("id":"ts")"), std::string::npos) << models.body();
  EXPECT_NE(models.body().find(R"("context_length":512)"), std::string::npos) << models.body();
  EXPECT_NE(models.body().find(R"("architecture":"llama")"), std::string::npos) << models.body();
  // The model that failed to load is not among the servable ones, but is listed apart.
  const std::string_view data =
      std::string_view(models.body()).substr(0, models.body().find("\"tern_unavailable\""));
  EXPECT_EQ(data.find(R"("id":"missing")"), std::string::npos) << models.body();
  EXPECT_NE(models.body().find(R"("tern_unavailable":[{"id":"missing","status":"failed"}])"),
            std::string::npos)
      << models.body();

  simdjson::dom::parser parser;
  const Response tokens =
      c.post("/tokenize", R"({"model":"ts","prompt":"Once upon a time","return_token_strs":true})");
  ASSERT_EQ(tokens.result_int(), 200) << tokens.body();
  simdjson::dom::element body = parse(parser, tokens.body());
  std::vector<std::int32_t> ids;
  for (std::int64_t id : body["tokens"].get_array()) ids.push_back(static_cast<std::int32_t>(id));
  EXPECT_EQ(ids, model().tokenizer->encode("Once upon a time", true));
  EXPECT_EQ(std::int64_t(body["max_model_len"]), 512);
  const Response text = c.post("/detokenize", fmt::format(R"({{"tokens":{}}})", id_list(ids)));
  ASSERT_EQ(text.result_int(), 200) << text.body();
  EXPECT_NE(text.body().find("Once upon a time"), std::string::npos) << text.body();

  const Response metrics = c.get("/metrics");
  EXPECT_NE(metrics.body().find("model=\"tinystories\""), std::string::npos);
  EXPECT_NE(metrics.body().find("tern_model_load_failed{model=\"missing\"} 1"), std::string::npos)
      << metrics.body();
  EXPECT_NE(metrics.body().find("tern_model_load_failed{model=\"tinystories\"} 0"),
            std::string::npos);
}

TEST(ServeReadiness, MissingModelNeverTurnsReady) {
  engine::ModelSpec missing;
  missing.name = "missing";
  missing.path = "/nonexistent/model.gguf";
  engine::ModelRegistry registry({missing}, {1});
  EXPECT_FALSE(registry.wait_until_loaded().ok());
  EngineModelService service(registry);
  ServiceMetrics metrics;
  ServerConfig config;
  config.host = "127.0.0.1";
  config.port = 0;
  Server server(config, service, metrics, Server::Options{false, 1});
  ASSERT_TRUE(server.start().ok());
  std::thread thread([&] { server.run(); });
  {
    Client c(server.port());
    EXPECT_EQ(c.get("/health").result_int(), 200);
    EXPECT_EQ(c.get("/ready").result_int(), 503);
    const Response chat =
        c.post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"hi"}]})");
    EXPECT_EQ(chat.result_int(), 503) << chat.body();
  }
  server.stop();
  thread.join();
}

// The binary: `tern serve --model DIR --port 0` turns ready, answers, and exits 0 on SIGTERM.
// /ready's status once it turns 200, or the last one seen within 5 s.
int ready_status(Client& c) {
  int status = 0;
  for (int i = 0; i < 500 && status != 200; ++i) {
    status = c.get("/ready").result_int();
    if (status != 200) std::this_thread::sleep_for(10ms);
  }
  return status;
}

TEST(ServeBinary, ServesAModelAndDrainsOnSigterm) {
  TERN_REQUIRE_SHARED(model_dir, kModelDir);
  tern::testing::ServeProcess serve(
      TERN_BINARY, {"--model", model_dir.string(), "--host", "127.0.0.1", "--port", "0"});
  ASSERT_TRUE(serve.started());
  const int port = serve.wait_for_port();
  ASSERT_GT(port, 0) << serve.log();
  {
    Client c(port);
    EXPECT_EQ(ready_status(c), 200) << serve.log();
    const Response models = c.get("/v1/models");
    EXPECT_NE(models.body().find(R"("id":"tinystories-656k")"), std::string::npos) << models.body();
    const Response done = c.post("/v1/completions",
                                 R"({"prompt":"Once upon a time","max_tokens":8,"temperature":0})");
    EXPECT_EQ(done.result_int(), 200) << done.body();
  }
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait_exit(), 0) << serve.log();
  const std::string log = serve.log();
  EXPECT_NE(log.find("model 'tinystories-656k' loaded"), std::string::npos) << log;
}

// `--backend cpu` serves as the default does.
TEST(ServeBinary, BackendCpuServes) {
  TERN_REQUIRE_SHARED(model_dir, kModelDir);
  tern::testing::ServeProcess serve(TERN_BINARY, {"--model", model_dir.string(), "--backend", "cpu",
                                                  "--host", "127.0.0.1", "--port", "0"});
  ASSERT_TRUE(serve.started());
  const int port = serve.wait_for_port();
  ASSERT_GT(port, 0) << serve.log();
  Client c(port);
  EXPECT_EQ(ready_status(c), 200) << serve.log();
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait_exit(), 0) << serve.log();
}

// A config that says `backend: cuda` where this build or machine cannot run it exits before it
// listens, naming the model and the reason, instead of serving the model on the CPU.
TEST(ServeBinary, BackendCudaItCannotRunNeverStarts) {
  TERN_REQUIRE_SHARED(model_dir, kModelDir);
  const std::filesystem::path config =
      std::filesystem::temp_directory_path() / fmt::format("tern-serve-cuda-{}.yaml", ::getpid());
  std::ofstream(config) << fmt::format(
      "server:\n  host: 127.0.0.1\n  port: 0\nmodels:\n  - name: gpu-model\n    path: {}\n"
      "    backend: cuda\n",
      model_dir.string());
  tern::testing::ServeProcess serve(TERN_BINARY, {"--config", config.string()});
  ASSERT_TRUE(serve.started());
  const std::optional<int> exit_code = serve.wait_exit(30s);
  std::filesystem::remove(config);
  const std::string log = serve.log();
  ASSERT_TRUE(exit_code.has_value()) << "still running: " << log;
  EXPECT_NE(*exit_code, 0) << log;
  EXPECT_NE(log.find(fmt::format("tern serve: model 'gpu-model' ({}): backend cuda: ",
                                 model_dir.string())),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("listening on"), std::string::npos) << log;
  EXPECT_EQ(log.find("loaded"), std::string::npos) << log;
}

}  // namespace
}  // namespace tern::service
