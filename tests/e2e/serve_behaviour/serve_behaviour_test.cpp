// Behaviour of the real `tern serve` binary with TinyStories: the 429 path of a full waiting
// queue, SIGTERM and SIGHUP drain with streams in flight, the drain timeout cutting streams,
// slow readers held to the stream buffer and dropped with their reason, `promtool check
// metrics` on the live /metrics, accept() backing off when descriptors run out, and
// bad input answered precisely while 50 streams run undisturbed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <latch>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "tests/support/http_client.h"
#include "tests/support/serve_config_fixture.h"
#include "tests/support/serve_process.h"
#include "tests/support/shared_data.h"

namespace tern::testing {
namespace {

using namespace std::chrono_literals;
using Response = HttpClient::Response;
using Verb = HttpClient::Verb;

// `tern serve --config` with one TinyStories model named "ts" on a free loopback port.
class ServeBehaviourTest : public ServeConfigFixture {
 protected:
  // Starts the server and waits until /ready is 200; returns its port (0 on failure).
  // `model_keys` and `server_keys` hold extra YAML lines for the model entry and the server.
  int start(const std::string& model_keys = {},
            std::optional<rlim_t> open_file_limit = std::nullopt,
            const std::string& server_keys = {}) {
    return launch(model_keys, server_keys, true, open_file_limit);
  }
};

// What a streamed completion delivered: the raw bytes, the joined text, the finish reasons and
// the usage chunk's completion tokens.
struct StreamResult {
  std::string raw;
  std::string text;
  std::vector<std::string> finish_reasons;
  std::int64_t completion_tokens = -1;
  bool done = false;
};

StreamResult summarize_stream(std::string raw) {
  StreamResult result;
  simdjson::dom::parser parser;
  for (const std::string& event : sse_data(raw)) {
    if (event == "[DONE]") {
      result.done = true;
      continue;
    }
    simdjson::dom::element chunk;
    if (parser.parse(event).get(chunk) != simdjson::SUCCESS) continue;
    simdjson::dom::array choices;
    if (chunk["choices"].get(choices) == simdjson::SUCCESS) {
      for (simdjson::dom::element choice : choices) {
        std::string_view text;
        if (choice["text"].get(text) == simdjson::SUCCESS) result.text += text;
        std::string_view finish;
        if (choice["finish_reason"].get(finish) == simdjson::SUCCESS) {
          result.finish_reasons.emplace_back(finish);
        }
      }
    }
    std::int64_t tokens = 0;
    if (chunk["usage"]["completion_tokens"].get(tokens) == simdjson::SUCCESS) {
      result.completion_tokens = tokens;
    }
  }
  result.raw = std::move(raw);
  return result;
}

std::string stream_body(const std::string& prompt, int max_tokens) {
  return fmt::format(
      R"({{"model":"ts","prompt":"{}","max_tokens":{},"temperature":0,"ignore_eos":true,)"
      R"("stream":true,"stream_options":{{"include_usage":true}}}})",
      prompt, max_tokens);
}

// An OpenAI error body: {"error":{"message","type","param","code"}} with these values.
void expect_error_body(const Response& response, int status, std::optional<std::string> param,
                       std::string_view message_part, std::optional<std::string> code = {}) {
  SCOPED_TRACE(response.body());
  EXPECT_EQ(response.result_int(), status);
  simdjson::dom::parser parser;
  simdjson::dom::element error;
  ASSERT_EQ(parser.parse(response.body()).get(error), simdjson::SUCCESS);
  error = error["error"];
  std::string_view message, type;
  ASSERT_EQ(error["message"].get(message), simdjson::SUCCESS);
  ASSERT_EQ(error["type"].get(type), simdjson::SUCCESS);
  EXPECT_NE(message.find(message_part), std::string_view::npos);
  ASSERT_EQ(error["param"].error(), simdjson::SUCCESS);
  if (param) {
    std::string_view actual;
    ASSERT_EQ(error["param"].get(actual), simdjson::SUCCESS);
    EXPECT_EQ(actual, *param);
  } else {
    EXPECT_TRUE(error["param"].is_null());
  }
  ASSERT_EQ(error["code"].error(), simdjson::SUCCESS);
  if (code) {
    std::string_view actual;
    ASSERT_EQ(error["code"].get(actual), simdjson::SUCCESS);
    EXPECT_EQ(actual, *code);
  }
}

TEST_F(ServeBehaviourTest, FullWaitingQueueGets429WithRetryAfter) {
  const int port = start("    max_num_seqs: 1\n    max_waiting_requests: 1\n");
  ASSERT_GT(port, 0) << serve_->log();
  constexpr int kRequests = 6;
  std::vector<Response> responses(kRequests);
  std::latch ready(kRequests);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRequests; ++i) {
    threads.emplace_back([&, i] {
      HttpClient client(port);
      ready.arrive_and_wait();
      responses[i] = client.post(
          "/v1/completions",
          R"({"model":"ts","prompt":"Once upon a time","max_tokens":480,"ignore_eos":true})");
    });
  }
  for (std::thread& thread : threads) thread.join();
  int rejected = 0, served = 0;
  for (const Response& response : responses) {
    if (response.result_int() == 429) {
      ++rejected;
      const auto retry_after = response.find("Retry-After");
      ASSERT_NE(retry_after, response.end()) << "429 without Retry-After";
      EXPECT_GE(std::atoi(std::string(retry_after->value()).c_str()), 1);
      expect_error_body(response, 429, std::nullopt, "overloaded", "rate_limit_exceeded");
      EXPECT_NE(response.body().find(R"("type":"rate_limit_error")"), std::string::npos);
    } else {
      ++served;
      EXPECT_EQ(response.result_int(), 200) << response.body();
      EXPECT_NE(response.body().find(R"("completion_tokens":480)"), std::string::npos)
          << response.body();
    }
  }
  // One runs and at most one waits (a request the engine has not picked up yet counts as
  // waiting too), so of six at once some are turned away and at least one is served.
  EXPECT_GE(rejected, 1);
  EXPECT_GE(served, 1);
  // The queue recovers: a request after the burst is served.
  HttpClient client(port);
  EXPECT_EQ(client.post("/v1/completions", R"({"model":"ts","prompt":"Once","max_tokens":2})")
                .result_int(),
            200);
}

// SIGTERM and SIGHUP both drain (SIGHUP's default action would kill the server mid-stream).
class ServeSignalTest : public ServeBehaviourTest, public ::testing::WithParamInterface<int> {};

TEST_P(ServeSignalTest, DrainsStreamsInFlight) {
  const int port = start();
  ASSERT_GT(port, 0) << serve_->log();
  HttpClient probe(port);  // opened before the signal: the listener closes on SIGTERM
  ASSERT_EQ(probe.get("/ready").result_int(), 200);

  constexpr int kStreams = 4;
  constexpr int kTokens = 480;
  std::vector<StreamResult> results(kStreams);
  std::latch streaming(kStreams);
  std::atomic<int> completed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      HttpClient client(port);
      client.send(Verb::post, "/v1/completions", stream_body("Once upon a time", kTokens));
      std::string raw = client.read_until("\"text\"");
      streaming.count_down();
      raw += client.read_until(HttpClient::kChunkedEnd);
      completed.fetch_add(1);
      results[i] = summarize_stream(std::move(raw));
    });
  }
  streaming.wait();
  serve_->signal(GetParam());
  // /ready turns 503 while the streams drain (the signal is handled asynchronously).
  int ready_status = 200;
  for (int i = 0; i < 200 && ready_status == 200; ++i) {
    Response ready;
    try {
      ready = probe.get("/ready");
    } catch (const boost::system::system_error& gone) {
      ADD_FAILURE() << "the server went away: " << gone.what();
      break;
    }
    ready_status = ready.result_int();
    if (ready_status == 503) {
      EXPECT_LT(completed.load(), kStreams) << "the streams ended before the drain began";
      expect_error_body(ready, 503, std::nullopt, "draining", "service_unavailable");
    } else {
      std::this_thread::sleep_for(1ms);
    }
  }
  EXPECT_EQ(ready_status, 503);
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE(fmt::format("stream {}", i));
    EXPECT_TRUE(results[i].done) << results[i].raw.substr(0, 2000);
    EXPECT_EQ(results[i].finish_reasons, std::vector<std::string>{"length"});
    EXPECT_EQ(results[i].completion_tokens, kTokens);
  }
  EXPECT_EQ(serve_->wait_exit(), 0) << serve_->log();
  EXPECT_NE(serve_->log().find("drained: every in-flight request finished"), std::string::npos)
      << serve_->log();
}

INSTANTIATE_TEST_SUITE_P(Signals, ServeSignalTest, ::testing::Values(SIGTERM, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& signal_info) {
                           return std::string(signal_info.param == SIGTERM ? "SIGTERM" : "SIGHUP");
                         });

// The value of one series in a /metrics body (its line is "SERIES VALUE"); nullopt if absent.
std::optional<double> metric_value(const std::string& body, std::string_view series) {
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > series.size() && line.starts_with(series) && line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nullopt;
}

// A stream that produces megabytes: n choices, each token with its 20 best alternatives.
std::string heavy_stream_body(int choices, int max_tokens) {
  return fmt::format(
      R"({{"model":"ts","prompt":"Once upon a time","max_tokens":{},"n":{},"logprobs":20,)"
      R"("temperature":0,"ignore_eos":true,"stream":true,"stream_options":{{"include_usage":true}}}})",
      max_tokens, choices);
}

// A client that reads its stream's first token, then nothing more until told to. The kernel
// still takes a few MiB on its behalf (the server's send buffer grows to about 4 MiB on
// loopback), so the streams in these tests produce several times that. The receive buffer is
// small, but not below a loopback segment (64 KiB): with 4 KiB, a reader that resumed waited on
// the sender's backed-off timers, and SlowReadersStayWithinTheStreamBuffer once took 335 s
// instead of 4 (the server's last 26 KB sat in its send queue while the client's was empty).
constexpr int kStalledReceiveBufferBytes = 128 << 10;

std::unique_ptr<HttpClient> start_stalled_stream(int port, const std::string& body,
                                                 std::string& received) {
  auto client = std::make_unique<HttpClient>(port, kStalledReceiveBufferBytes);
  client->send(Verb::post, "/v1/completions", body);
  received = client->read_until("\"text\"");
  return client;
}

// Polls the server's log until it contains `needle`.
bool wait_for_log(ServeProcess& serve, std::string_view needle, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (serve.log().find(needle) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// When the drain timeout runs out, each open stream gets an error event and its [DONE] before
// the close, the log counts the cut streams, and the process exits 3 (drain incomplete).
TEST_F(ServeBehaviourTest, DrainTimeoutCutsStreamsWithAnErrorEvent) {
  const int port =
      start({}, std::nullopt, "  limits: {stream_buffer_bytes: 16KiB}\n  timeouts: {drain_s: 1}\n");
  ASSERT_GT(port, 0) << serve_->log();
  // Clients that stop reading: their streams cannot finish before the drain runs out.
  constexpr int kStreams = 3;
  std::vector<std::string> raw(kStreams);
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.push_back(start_stalled_stream(port, heavy_stream_body(16, 480), raw[i]));
  }
  serve_->signal(SIGTERM);
  ASSERT_TRUE(wait_for_log(*serve_, "drain timeout", 30s)) << serve_->log();
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE(fmt::format("stream {}", i));
    raw[i] += clients[i]->read_until(HttpClient::kChunkedEnd);
    EXPECT_TRUE(raw[i].ends_with(HttpClient::kChunkedEnd))
        << raw[i].substr(raw[i].size() - std::min<std::size_t>(raw[i].size(), 500));
    const std::vector<std::string> events = sse_data(raw[i]);
    ASSERT_GE(events.size(), 2u);
    EXPECT_EQ(events.back(), "[DONE]");
    const std::string& error = events[events.size() - 2];
    EXPECT_NE(error.find(R"("code":"service_unavailable")"), std::string::npos) << error;
    EXPECT_NE(error.find("drain"), std::string::npos) << error;
  }
  EXPECT_EQ(serve_->wait_exit(), 3) << serve_->log();
  EXPECT_NE(serve_->log().find(fmt::format("cut {} streams", kStreams)), std::string::npos)
      << serve_->log();
}

// Five readers that stop reading streams of n=64 with 20 logprobs a token: each holds at most
// stream_buffer_bytes plus one event (64 KiB, docs/config.md) while the engine pauses its
// samples, and every stream is complete once its reader catches up.
TEST_F(ServeBehaviourTest, SlowReadersStayWithinTheStreamBuffer) {
  constexpr double kBound = 64 << 10;
  constexpr double kOneEvent = 64 << 10;
  // A paused request keeps its place in the batch, so the batch has room for all five. The
  // engine runs at the default nice here: each pause and resume is a wake-up of the engine
  // thread, and at compute_nice 10 beside the other tests ctest runs at once, thousands of them
  // took minutes (this test is about the bound, not about priorities).
  const int port = start("    max_num_seqs: 320\n", std::nullopt,
                         "  compute_nice: 0\n  limits: {stream_buffer_bytes: 64KiB}\n"
                         "  timeouts: {slow_client_s: 600}\n");
  ASSERT_GT(port, 0) << serve_->log();
  constexpr int kReaders = 5;
  constexpr int kChoices = 64;
  constexpr int kTokens = 150;
  std::vector<std::string> raw(kReaders);
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < kReaders; ++i) {
    clients.push_back(start_stalled_stream(port, heavy_stream_body(kChoices, kTokens), raw[i]));
  }
  // Each stream fills its buffer and stops there: the server stops taking the engine's events.
  HttpClient probe(port);
  std::string metrics;
  std::optional<double> buffered;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  do {
    std::this_thread::sleep_for(20ms);
    metrics = probe.get("/metrics").body();
    buffered = metric_value(metrics, "tern_stream_buffered_bytes");
  } while ((!buffered || *buffered < kReaders * kBound) &&
           std::chrono::steady_clock::now() < deadline);
  ASSERT_TRUE(buffered.has_value()) << metrics;
  ASSERT_GE(*buffered, kReaders * kBound) << metrics;
  const std::optional<double> peak = metric_value(metrics, "tern_stream_buffer_peak_bytes");
  ASSERT_TRUE(peak.has_value()) << metrics;
  EXPECT_LE(*peak, kBound + kOneEvent);
  EXPECT_LE(*buffered, kReaders * (kBound + kOneEvent));

  // Paused, not dropped or cancelled: every choice of every stream runs to its length.
  for (int i = 0; i < kReaders; ++i) {
    SCOPED_TRACE(fmt::format("stream {}", i));
    const StreamResult result =
        summarize_stream(raw[i] + clients[i]->read_until(HttpClient::kChunkedEnd));
    EXPECT_TRUE(result.done);
    EXPECT_EQ(result.finish_reasons, std::vector<std::string>(kChoices, "length"));
    EXPECT_EQ(result.completion_tokens, kChoices * kTokens);
  }
  // A new connection: reading the streams may outlast the probe's keep-alive (timeouts.idle_s).
  HttpClient final_probe(port);
  const std::optional<double> final_peak =
      metric_value(final_probe.get("/metrics").body(), "tern_stream_buffer_peak_bytes");
  ASSERT_TRUE(final_peak.has_value());
  EXPECT_LE(*final_peak, kBound + kOneEvent);
}

// A reader that takes nothing for slow_client_s is dropped: its request is cancelled, and the
// access log and /metrics say why (reason slow_client), unlike a client that hung up.
TEST_F(ServeBehaviourTest, SlowClientDropIsLoggedAndCountedWithItsReason) {
  const int port = start(
      {}, std::nullopt, "  limits: {stream_buffer_bytes: 16KiB}\n  timeouts: {slow_client_s: 1}\n");
  ASSERT_GT(port, 0) << serve_->log();
  std::string raw;
  const auto slow = start_stalled_stream(port, heavy_stream_body(16, 480), raw);
  ASSERT_TRUE(wait_for_log(*serve_, "reason=slow_client", 30s)) << serve_->log();
  const std::string log = serve_->log();
  const std::size_t at = log.find("reason=slow_client");
  const std::size_t line_start = log.rfind('\n', at) + 1;
  const std::string line = log.substr(line_start, log.find('\n', at) - line_start);
  EXPECT_NE(line.find("POST /v1/completions 499"), std::string::npos) << log;

  HttpClient probe(port);
  const std::string metrics = probe.get("/metrics").body();
  EXPECT_EQ(metric_value(metrics, R"(tern_streams_dropped_total{model="ts",reason="slow_client"})"),
            1.0)
      << metrics;
  // The engine let the request go.
  std::optional<double> running;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  do {
    std::this_thread::sleep_for(20ms);
    running = metric_value(probe.get("/metrics").body(), R"(tern_requests_running{model="ts"})");
  } while (running != 0.0 && std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(running, 0.0);
}

// promtool from Debian's `prometheus` package, if it is on PATH.
std::optional<std::filesystem::path> find_promtool() {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    const std::filesystem::path candidate =
        std::filesystem::path(rest.substr(0, colon)) / "promtool";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
  }
  return std::nullopt;
}

TEST_F(ServeBehaviourTest, LiveMetricsPassPromtool) {
  const auto promtool = find_promtool();
  if (!promtool) GTEST_SKIP() << "needs promtool (Debian's prometheus package; scripts/setup.sh)";
  const int port = start();
  ASSERT_GT(port, 0) << serve_->log();
  HttpClient client(port);
  EXPECT_EQ(client.post("/v1/completions", R"({"model":"ts","prompt":"Once","max_tokens":8})")
                .result_int(),
            200);
  client.send(Verb::post, "/v1/completions", stream_body("The cat", 8));
  EXPECT_TRUE(summarize_stream(client.read_until(HttpClient::kChunkedEnd)).done);
  EXPECT_EQ(
      client
          .post("/v1/chat/completions",
                R"({"model":"ts","messages":[{"role":"user","content":"Hi"}],"max_tokens":4})")
          .result_int(),
      200);
  EXPECT_EQ(client.post("/v1/completions", R"({"model":"nope","prompt":"x"})").result_int(), 404);
  EXPECT_EQ(client.post("/v1/completions", R"({"model":"ts","prompt":"x","top_p":9})").result_int(),
            400);
  const Response metrics = client.get("/metrics");
  ASSERT_EQ(metrics.result_int(), 200);
  for (const char* name :
       {"tern_requests_total", "tern_time_to_first_token_seconds_bucket",
        "tern_inter_token_latency_seconds_bucket", "tern_request_duration_seconds_bucket",
        "tern_request_prompt_tokens_bucket", "tern_request_generation_tokens_bucket",
        "tern_requests_running", "tern_requests_waiting", "tern_kv_cache_usage_ratio",
        "tern_prefix_cache_hit_ratio", "tern_open_connections"}) {
    EXPECT_NE(metrics.body().find(name), std::string::npos) << name;
  }
  const auto metrics_path = std::filesystem::temp_directory_path() /
                            fmt::format("tern-behaviour-metrics-{}.txt", ::getpid());
  std::ofstream(metrics_path) << metrics.body();
  const std::string command =
      fmt::format("'{}' check metrics < '{}' 2>&1", promtool->string(), metrics_path.string());
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char chunk[512];
  while (const std::size_t n = std::fread(chunk, 1, sizeof chunk, pipe)) output.append(chunk, n);
  const int status = ::pclose(pipe);
  std::filesystem::remove(metrics_path);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output << "\n" << metrics.body();
}

TEST_F(ServeBehaviourTest, BadInputWhileFiftyStreamsRun) {
  const int port = start("    kv_cache_dtype: f32\n");
  ASSERT_GT(port, 0) << serve_->log();
  const std::vector<std::string> prompts = {"Once upon a time", "Tom and his dog",
                                            "The sun was shining and", "Mom said"};
  constexpr int kTokens = 128;
  // Each prompt's greedy text alone, before the crowd.
  std::vector<std::string> expected;
  {
    HttpClient client(port);
    simdjson::dom::parser parser;
    for (const std::string& prompt : prompts) {
      const Response alone = client.post(
          "/v1/completions",
          fmt::format(
              R"({{"model":"ts","prompt":"{}","max_tokens":{},"temperature":0,"ignore_eos":true}})",
              prompt, kTokens));
      ASSERT_EQ(alone.result_int(), 200) << alone.body();
      expected.emplace_back(
          std::string_view(parse_json(parser, alone.body())["choices"].at(0)["text"]));
    }
  }

  constexpr int kStreams = 50;
  std::vector<StreamResult> results(kStreams);
  std::latch streaming(kStreams);
  std::atomic<int> completed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([&, i] {
      HttpClient client(port);
      client.send(Verb::post, "/v1/completions", stream_body(prompts[i % prompts.size()], kTokens));
      std::string raw = client.read_until("\"text\"");
      streaming.count_down();
      raw += client.read_until(HttpClient::kChunkedEnd);
      completed.fetch_add(1);
      results[i] = summarize_stream(std::move(raw));
    });
  }
  streaming.wait();

  std::string long_text;
  for (int i = 0; i < 300; ++i) long_text += "the little dog ran ";
  const std::string deep = R"({"model":"ts","messages":[{"role":"user","content":"hi"}],"x":)" +
                           std::string(70, '[') + std::string(70, ']') + "}";
  struct BadCase {
    const char* what;
    const char* path;
    std::string body;
    std::optional<std::string> param;
    std::string message_part;
    std::optional<std::string> code;
  };
  const std::vector<BadCase> cases = {
      {"malformed JSON", "/v1/chat/completions",
       R"({"model":"ts","messages":[{"role":"user","content":"hi"})", std::nullopt,
       "not valid JSON"},
      {"nesting deeper than 64", "/v1/chat/completions", deep, std::nullopt,
       "nested deeper than 64 levels"},
      {"messages of the wrong type", "/v1/chat/completions", R"({"model":"ts","messages":"hi"})",
       "messages", "Invalid type for 'messages': expected an array", "invalid_type"},
      {"max_tokens of the wrong type", "/v1/completions",
       R"({"model":"ts","prompt":"hi","max_tokens":"ten"})", "max_tokens",
       "Invalid type for 'max_tokens': expected an integer", "invalid_type"},
      {"invalid UTF-8 in a string", "/v1/chat/completions",
       "{\"model\":\"ts\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\xff\xfe\"}]}",
       std::nullopt, "not valid UTF-8"},
      {"empty messages", "/v1/chat/completions", R"({"model":"ts","messages":[]})", "messages",
       "'messages' must contain at least one message", "invalid_value"},
      {"unknown role", "/v1/chat/completions",
       R"({"model":"ts","messages":[{"role":"wizard","content":"hi"}]})", "messages[0].role",
       "Invalid role 'wizard'", "invalid_value"},
      {"negative max_tokens", "/v1/completions", R"({"model":"ts","prompt":"hi","max_tokens":-5})",
       "max_tokens", "Invalid value for 'max_tokens': -5 is not in", "invalid_value"},
      {"huge max_tokens", "/v1/chat/completions",
       R"({"model":"ts","messages":[{"role":"user","content":"hi"}],"max_tokens":99999999999})",
       "max_tokens", "99999999999 is not in", "invalid_value"},
      {"max_tokens past the context", "/v1/completions",
       R"({"model":"ts","prompt":"hi","max_tokens":100000})", "prompt",
       "maximum context length is 512 tokens", "context_length_exceeded"},
      {"chat prompt longer than the context", "/v1/chat/completions",
       fmt::format(
           R"({{"model":"ts","messages":[{{"role":"user","content":"{}"}}],"max_tokens":4}})",
           long_text),
       "messages", "in the messages, 4 in the completion", "context_length_exceeded"},
      {"prompt longer than the context", "/v1/completions",
       fmt::format(R"({{"model":"ts","prompt":"{}","max_tokens":4}})", long_text), "prompt",
       "maximum context length is 512 tokens", "context_length_exceeded"},
  };
  for (const BadCase& bad : cases) {
    SCOPED_TRACE(bad.what);
    HttpClient client(port);
    expect_error_body(client.post(bad.path, bad.body), 400, bad.param, bad.message_part, bad.code);
  }
  EXPECT_LT(completed.load(), kStreams) << "the streams ended before the bad input was all sent";

  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kStreams; ++i) {
    SCOPED_TRACE(fmt::format("stream {} ({})", i, prompts[i % prompts.size()]));
    EXPECT_TRUE(results[i].done) << results[i].raw.substr(0, 2000);
    EXPECT_EQ(results[i].finish_reasons, std::vector<std::string>{"length"});
    EXPECT_EQ(results[i].completion_tokens, kTokens);
    EXPECT_EQ(results[i].text, expected[i % prompts.size()]);
  }
  // The server is still healthy and serves the next request.
  HttpClient client(port);
  EXPECT_EQ(client.get("/health").result_int(), 200);
}

}  // namespace
}  // namespace tern::testing

namespace tern::testing {
namespace {

// User plus system CPU seconds the process has used so far (from /proc/PID/stat).
double cpu_seconds(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t after_name = text.rfind(')');
  if (after_name == std::string::npos) return -1;
  std::istringstream fields(text.substr(after_name + 2));
  std::string field;
  double ticks = 0;
  for (int index = 3; fields >> field; ++index) {
    if (index == 14 || index == 15) ticks += std::stod(field);
    if (index == 15) break;
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::size_t count_occurrences(const std::string& text, std::string_view needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

// With its descriptors used up, the server keeps serving the connections it has, retries
// accept() with a backoff instead of spinning on EMFILE, and accepts again once some close.
TEST_F(ServeBehaviourTest, OutOfDescriptorsKeepsServingAndBacksOffAccept) {
  const int port = start({}, 64);
  ASSERT_NE(port, 0) << serve_->log();
  HttpClient held(port);
  ASSERT_EQ(held.get("/health").result_int(), 200);

  // More connections than descriptors: the rest wait in the listen backlog while accept() fails.
  std::vector<std::unique_ptr<HttpClient>> flood;
  for (int i = 0; i < 100; ++i) flood.push_back(std::make_unique<HttpClient>(port));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (serve_->log().find("accept failed") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_NE(serve_->log().find("accept failed"), std::string::npos) << serve_->log();

  const double cpu_before = cpu_seconds(serve_->pid());
  std::this_thread::sleep_for(2s);
  const double cpu_used = cpu_seconds(serve_->pid()) - cpu_before;
  // A loop retrying accept() at once would burn a whole core (and log every attempt).
  EXPECT_LT(cpu_used, 1.0);
  EXPECT_LT(count_occurrences(serve_->log(), "accept failed"), 20u) << serve_->log();

  // The connection it already had still works, streaming included.
  EXPECT_EQ(held.get("/health").result_int(), 200);
  held.send(Verb::post, "/v1/completions", stream_body("Once upon a time", 8));
  const StreamResult stream = summarize_stream(held.read_until(HttpClient::kChunkedEnd));
  EXPECT_TRUE(stream.done);
  EXPECT_EQ(stream.completion_tokens, 8);

  // Descriptors come back when the flood closes; new connections are accepted again.
  flood.clear();
  HttpClient fresh(port);
  EXPECT_EQ(fresh.get("/health").result_int(), 200);
}

}  // namespace
}  // namespace tern::testing
