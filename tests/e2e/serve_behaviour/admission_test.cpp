// Admission in the real `tern serve`: a fan-out request is charged prompts x n before anything
// is queued, one client flooding cannot disturb the others, no overload path answers 500, and a
// KV cache too small for the context stops the server at startup with what would fit.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "tests/support/serve_config_fixture.h"

namespace tern::testing {
namespace {

using namespace std::chrono_literals;
using Response = HttpClient::Response;

class ServeAdmissionTest : public ServeConfigFixture {};

std::string repeated_prompts(int prompts, int n, int max_tokens) {
  std::string list;
  for (int i = 0; i < prompts; ++i) list += i == 0 ? R"("x")" : R"(,"x")";
  return fmt::format(R"({{"model":"ts","prompt":[{}],"n":{},"max_tokens":{}}})", list, n,
                     max_tokens);
}

TEST_F(ServeAdmissionTest, FanOutBeyondTheLimitIs400NamingTheLimitAndTheParam) {
  const int port = launch("");
  ASSERT_GT(port, 0) << serve_->log();
  HttpClient client(port);
  const Response response = client.post("/v1/completions", repeated_prompts(100, 128, 1));
  EXPECT_EQ(response.result_int(), 400) << response.body();
  simdjson::dom::parser parser;
  const simdjson::dom::element error = error_of(parser, response.body());
  std::string_view param, message;
  ASSERT_EQ(error["param"].get(param), simdjson::SUCCESS) << response.body();
  EXPECT_EQ(param, "n");
  ASSERT_EQ(error["message"].get(message), simdjson::SUCCESS);
  EXPECT_NE(message.find("max_sequences_per_request"), std::string_view::npos) << message;
  EXPECT_NE(message.find("12800"), std::string_view::npos) << message;

  // Raised in the config, the same request is served.
  serve_.reset();
  const int raised = launch(
      "    max_sequences_per_request: 12800\n    max_waiting_sequences: 12800\n"
      "    max_waiting_share_per_client: 1.0\n");
  ASSERT_GT(raised, 0) << serve_->log();
  HttpClient again(raised);
  const Response served = again.post("/v1/completions", repeated_prompts(100, 128, 1));
  EXPECT_EQ(served.result_int(), 200) << served.body().substr(0, 400);
  EXPECT_NE(served.body().find(R"("completion_tokens":12800)"), std::string::npos);
}

// The text of a greedy completion for `prompt`, as `key`'s client.
Response complete(HttpClient& client, const std::string& key, const std::string& prompt) {
  return client.post(
      "/v1/completions",
      fmt::format(R"({{"model":"ts","prompt":"{}","max_tokens":24,"temperature":0}})", prompt),
      {{"Authorization", "Bearer " + key}});
}

std::string text_of(const Response& response) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(response.body()).get(root) != simdjson::SUCCESS) return {};
  std::string_view text;
  if (root["choices"].at(0)["text"].get(text) != simdjson::SUCCESS) return {};
  return std::string(text);
}

TEST_F(ServeAdmissionTest, AFloodOfFanOutRequestsLeavesEveryOtherClientItsExactOutput) {
  constexpr int kClients = 8;
  constexpr int kRequestsPerClient = 2;
  std::string keys = R"(  api_keys: ["flooder")";
  for (int c = 0; c < kClients; ++c) keys += fmt::format(R"(, "client-{}")", c);
  keys += "]\n";
  const int port = launch("", keys);
  ASSERT_GT(port, 0) << serve_->log();

  const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Lily saw a",
                                            "Tom and his mom"};
  std::map<std::string, std::string> solo;
  {
    HttpClient client(port);
    for (const std::string& prompt : prompts) {
      const Response response = complete(client, "client-0", prompt);
      ASSERT_EQ(response.result_int(), 200) << response.body();
      solo[prompt] = text_of(response);
      ASSERT_FALSE(solo[prompt].empty());
    }
  }

  // The flooder sends the largest requests it may (2 prompts x n = 128 = 256 sequences) from
  // eight connections at once, as fast as it is answered: twice the whole waiting queue.
  std::atomic<bool> flooding{true};
  std::atomic<int> flood_ok{0}, flood_429{0}, flood_other{0};
  std::vector<std::thread> flooders;
  for (int f = 0; f < 8; ++f) {
    flooders.emplace_back([&] {
      HttpClient client(port);
      while (flooding.load()) {
        const Response response = client.post("/v1/completions", repeated_prompts(2, 128, 8),
                                              {{"Authorization", "Bearer flooder"}});
        if (response.result_int() == 200) {
          ++flood_ok;
        } else if (response.result_int() == 429 && response.find("Retry-After") != response.end()) {
          ++flood_429;
          std::this_thread::sleep_for(10ms);  // a little patience, less than Retry-After asks
        } else {
          ++flood_other;
          ADD_FAILURE() << response.result_int() << " " << response.body();
        }
      }
    });
  }
  // Let the flood fill the queue before the others arrive: it has once some of it is turned away.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (flood_429.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }

  std::atomic<int> exact{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      HttpClient client(port);
      for (int r = 0; r < kRequestsPerClient; ++r) {
        const std::string& prompt = prompts[static_cast<std::size_t>(c + r) % prompts.size()];
        const Response response = complete(client, fmt::format("client-{}", c), prompt);
        EXPECT_EQ(response.result_int(), 200) << response.body();
        if (text_of(response) == solo[prompt]) {
          ++exact;
        } else {
          ADD_FAILURE() << "client " << c << " got '" << text_of(response) << "', solo '"
                        << solo[prompt] << "'";
        }
      }
    });
  }
  for (std::thread& thread : clients) thread.join();
  flooding = false;
  for (std::thread& thread : flooders) thread.join();
  EXPECT_EQ(exact.load(), kClients * kRequestsPerClient);
  // The flood did reach the cap: some of it was turned away with 429, none with anything else.
  EXPECT_GT(flood_ok.load(), 0);
  EXPECT_GT(flood_429.load(), 0);
  EXPECT_EQ(flood_other.load(), 0);
  std::printf("[ flood    ] flooder: %d served, %d got 429; others: %d of %d exact\n",
              flood_ok.load(), flood_429.load(), exact.load(), kClients * kRequestsPerClient);
}

TEST_F(ServeAdmissionTest, AKvCacheSmallerThanTheContextStopsStartupWithWhatWouldFit) {
  launch("    kv_cache_bytes: 200KiB\n", {}, false);
  ASSERT_TRUE(serve_->started());
  const std::optional<int> code = serve_->wait_exit(30s);
  ASSERT_TRUE(code.has_value()) << serve_->log();
  const std::string log = serve_->log();
  EXPECT_EQ(*code, 2) << log;
  EXPECT_NE(log.find("model 'ts'"), std::string::npos) << log;
  EXPECT_NE(log.find("context of 512 tokens"), std::string::npos) << log;
  std::smatch fits;
  ASSERT_TRUE(std::regex_search(log, fits, std::regex("max_model_len to at most ([0-9]+)"))) << log;

  // With max_model_len at what fits, it starts and serves a request that uses all of it.
  serve_.reset();
  const int max_model_len = std::atoi(fits[1].str().c_str());
  const int port =
      launch(fmt::format("    kv_cache_bytes: 200KiB\n    max_model_len: {}\n", max_model_len));
  ASSERT_GT(port, 0) << serve_->log();
  HttpClient client(port);
  const Response response = client.post(
      "/v1/completions",
      fmt::format(R"({{"model":"ts","prompt":"Once","max_tokens":{},"ignore_eos":true}})",
                  max_model_len - 8));
  EXPECT_EQ(response.result_int(), 200) << response.body();
}

}  // namespace
}  // namespace tern::testing
