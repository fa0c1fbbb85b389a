// Structured outputs stay bounded through the whole server (issue 28): compiles that time out
// stop, so /metrics' gauge of live compiles returns to 0, and a grammar whose masks pass the step
// budget ends only its own request, with an error naming its field. The byte-level demo model
// (tern make-demo), whose vocabulary writes any grammar.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>
#include <boost/beast/http.hpp>

#include "engine/model/demo_model.h"
#include "engine/registry.h"
#include "service/engine_model_service.h"
#include "service/server.h"
#include "tests/support/http_client.h"

namespace tern::service {
namespace {

using namespace std::chrono_literals;
using Client = tern::testing::HttpClient;
namespace http = boost::beast::http;

class StructuredOutputBoundsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_path_ = std::filesystem::temp_directory_path() /
                  fmt::format("tern-structured-output-bounds-{}.gguf", ::getpid());
    ASSERT_TRUE(engine::write_demo_model(model_path_.string()).ok());
    engine::ModelSpec spec;
    spec.name = "demo";
    spec.path = model_path_.string();
    spec.max_num_seqs = 8;
    spec.max_num_batched_tokens = 256;
    spec.kv_cache_bytes = 64ull << 20;
    spec.structured_outputs_compile_timeout_ms = 300;
    spec.structured_outputs_max_concurrent_compiles = 2;
    registry_ = new engine::ModelRegistry({spec}, {2});
    ASSERT_TRUE(registry_->wait_until_loaded().ok());
  }
  static void TearDownTestSuite() {
    delete registry_;
    registry_ = nullptr;
    std::filesystem::remove(model_path_);
  }

  void SetUp() override {
    service_ = std::make_unique<EngineModelService>(*registry_);
    ServerConfig config;
    config.host = "127.0.0.1";
    config.port = 0;
    server_ = std::make_unique<Server>(config, *service_, metrics_, Server::Options{false, 2});
    ASSERT_TRUE(server_->start().ok());
    thread_ = std::thread([this] { server_->run(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  int port() const { return server_->port(); }

  static inline engine::ModelRegistry* registry_ = nullptr;
  static inline std::filesystem::path model_path_;
  ServiceMetrics metrics_;
  std::unique_ptr<EngineModelService> service_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

std::string chat_with_schema(const std::string& schema) {
  return R"({"model":"demo","messages":[{"role":"user","content":"Numbers?"}],"max_tokens":8,)"
         R"("response_format":{"type":"json_schema","json_schema":{"name":"n","schema":)" +
         schema + "}}}";
}

// The report's six arrays of a hundred thousand integers, each varied so that none is a cache
// hit, and a hundred-thousand-value enum, at once: each gets its error (a 400 at the timeout, or
// a 429 while both compile threads are busy), and the gauge of live compiles is 0 again once
// their timeouts have passed.
TEST_F(StructuredOutputBoundsTest, CompilesThatTimeOutEndAndTheGaugeReturnsToZero) {
  std::vector<std::string> bodies;
  for (int i = 0; i < 6; ++i) {
    bodies.push_back(chat_with_schema(fmt::format(
        R"({{"type":"array","items":{{"type":"integer"}},"minItems":{},"maxItems":{}}})",
        100000 + i, 100001 + i)));
  }
  std::string values;
  for (int i = 0; i < 100000; ++i) values += fmt::format("{}\"v{}\"", i > 0 ? "," : "", i);
  bodies.push_back(chat_with_schema(R"({"enum":[)" + values + "]}"));
  std::vector<int> statuses(bodies.size(), 0);
  std::vector<std::string> retry_after(bodies.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    clients.emplace_back([&, i] {
      Client client(port());
      const auto response = client.post("/v1/chat/completions", bodies[i]);
      statuses[i] = static_cast<int>(response.result_int());
      retry_after[i] = std::string(response[http::field::retry_after]);
    });
  }
  for (std::thread& client : clients) client.join();
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    EXPECT_TRUE(statuses[i] == 400 || statuses[i] == 429) << "request " << i << ": " << statuses[i];
    if (statuses[i] == 429) {
      EXPECT_EQ(retry_after[i], "1");
    }
  }
  const std::string idle = "tern_structured_output_compiles_running{model=\"demo\"} 0";
  std::string text;
  for (int poll = 0; poll < 600;
       ++poll) {  // a minute at most; a compile that runs on takes minutes
    text = Client(port()).get("/metrics").body();
    if (text.find(idle) != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(text.find(idle), std::string::npos) << text;
  EXPECT_LE(registry_->find("demo")->grammars->stats().compiles_peak, 2);
}

// Issue 28's kilobyte of GBNF, r_i ::= r_{i+1} r_{i+1} | "x": its masks pass the step budget
// within a few tokens. Its request ends with a 400 naming the grammar; a plain request sent
// beside it gives the text it gives alone.
TEST_F(StructuredOutputBoundsTest, AGrammarPastTheStepBudgetEndsOnlyItsRequest) {
  std::string gbnf = "root ::= r0\n";
  for (int i = 0; i < 30; ++i) gbnf += fmt::format("r{} ::= r{} r{} | \"x\"\n", i, i + 1, i + 1);
  gbnf += "r30 ::= \"x\"\n";
  std::string grammar_json;
  for (const char c : gbnf)
    grammar_json += c == '\n' ? std::string("\\n") : c == '"' ? "\\\"" : std::string(1, c);
  const std::string plain =
      R"({"model":"demo","prompt":"Once upon a time","max_tokens":32,"temperature":0})";
  const std::string solo = Client(port()).post("/v1/completions", plain).body();
  std::string doubled;
  int doubled_status = 0;
  std::thread constrained([&] {
    const auto response = Client(port()).post(
        "/v1/completions", R"({"model":"demo","prompt":"x","max_tokens":200,"min_tokens":200,)"
                           R"("temperature":0,"grammar":")" +
                               grammar_json + "\"}");
    doubled_status = static_cast<int>(response.result_int());
    doubled = response.body();
  });
  const std::string beside = Client(port()).post("/v1/completions", plain).body();
  constrained.join();
  EXPECT_EQ(doubled_status, 400) << doubled;
  EXPECT_NE(doubled.find("the grammar of 'grammar'"), std::string::npos) << doubled;
  EXPECT_NE(doubled.find("structured_outputs_max_mask_work"), std::string::npos) << doubled;
  simdjson::dom::parser parser;
  const auto text_of = [&](const std::string& body) {
    return std::string(std::string_view(parser.parse(body)["choices"].at(0)["text"]));
  };
  EXPECT_EQ(text_of(beside), text_of(solo));
}

}  // namespace
}  // namespace tern::service
