// tern-loadgen end to end: against `tern serve` with TinyStories (completions, chat, a sweep with
// its gnuplot PNG), in direct mode through the engine, and against a port where nothing listens.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "tests/support/serve_process.h"
#include "tests/support/shared_data.h"

namespace tern::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kModel = "models/tinystories-656k-f32.gguf";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct LoadgenRun {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
  std::string json;
};

// Runs tern-loadgen with `arguments` and `--json FILE`; collects its outputs.
LoadgenRun run_loadgen(const std::string& arguments) {
  static int runs = 0;
  const std::filesystem::path base = std::filesystem::temp_directory_path() /
                                     fmt::format("tern-loadgen-{}-{}", ::getpid(), ++runs);
  const std::string json = base.string() + ".json";
  const std::string out = base.string() + ".out";
  const std::string err = base.string() + ".err";
  const std::string command = fmt::format("'{}' {} --json '{}' > '{}' 2> '{}'", TERN_LOADGEN_BINARY,
                                          arguments, json, out, err);
  const int status = std::system(command.c_str());
  LoadgenRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.stdout_text = read_file(out);
  run.stderr_text = read_file(err);
  run.json = read_file(json);
  for (const std::string& path : {json, out, err}) std::filesystem::remove(path);
  return run;
}

bool on_path(const std::string& program) {
  return std::system(fmt::format("command -v {} > /dev/null 2>&1", program).c_str()) == 0;
}

// A loopback port with nothing listening: bound, read and released.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

std::int64_t integer(simdjson::dom::element element, std::string_view pointer) {
  std::int64_t value = -1;
  EXPECT_EQ(element.at_pointer(pointer).get_int64().get(value), simdjson::SUCCESS) << pointer;
  return value;
}

double number(simdjson::dom::element element, std::string_view pointer) {
  double value = -1;
  EXPECT_EQ(element.at_pointer(pointer).get_double().get(value), simdjson::SUCCESS) << pointer;
  return value;
}

// Latency percentiles that a well-formed report must satisfy.
void expect_consistent_latencies(simdjson::dom::element run) {
  for (const char* p : {"p50", "p90", "p99"}) {
    const double ttft = number(run, fmt::format("/ttft_ms/{}", p));
    const double e2e = number(run, fmt::format("/e2e_ms/{}", p));
    EXPECT_GT(ttft, 0) << p;
    EXPECT_LE(ttft, e2e) << p;
  }
  EXPECT_LE(number(run, "/ttft_ms/p50"), number(run, "/ttft_ms/p99"));
  EXPECT_LE(number(run, "/e2e_ms/p50"), number(run, "/e2e_ms/p99"));
}

// `tern serve --model` with TinyStories on a free loopback port, ready to answer.
class LoadgenServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::filesystem::path model = shared_path(kModel);
    if (!std::filesystem::exists(model)) {
      GTEST_SKIP() << "needs " << model.string() << " (../shared is absent or incomplete)";
    }
    serve_.emplace(TERN_BINARY, std::vector<std::string>{"--model", model.string(), "--host",
                                                         "127.0.0.1", "--port", "0"});
    ASSERT_TRUE(serve_->started());
    port_ = serve_->wait_for_port();
    ASSERT_NE(port_, 0) << serve_->log();
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (serve_->log().find("ready:") == std::string::npos) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << serve_->log();
      std::this_thread::sleep_for(10ms);
    }
  }

  std::string url() const { return fmt::format("--url http://127.0.0.1:{}", port_); }

  std::optional<ServeProcess> serve_;
  int port_ = 0;
};

TEST_F(LoadgenServeTest, CompletionsReportEveryMeasurement) {
  const LoadgenRun run = run_loadgen(fmt::format(
      "{} -c 8 -n 24 --max-tokens 8 --prompt-words 16 --probe-health-ms 50 --server-pid {}", url(),
      serve_->pid()));
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text << run.stdout_text;
  EXPECT_NE(run.stdout_text.find("| completed | 24 |"), std::string::npos) << run.stdout_text;
  simdjson::dom::parser parser;
  simdjson::dom::element report;
  ASSERT_EQ(parser.parse(run.json).get(report), simdjson::SUCCESS) << run.json;
  EXPECT_EQ(integer(report, "/completed"), 24);
  EXPECT_EQ(integer(report, "/errors"), 0);
  EXPECT_EQ(integer(report, "/output_tokens"), 24 * 8);
  EXPECT_EQ(integer(report, "/requests"), 24);
  EXPECT_EQ(integer(report, "/concurrency"), 8);
  EXPECT_GT(number(report, "/output_tokens_per_s"), 0);
  EXPECT_GT(number(report, "/duration_s"), 0);
  EXPECT_EQ(integer(report, "/ttft_ms/count"), 24);
  // At most 8 content chunks (7 gaps) each: a token whose text is held back adds no chunk.
  const std::int64_t gaps = integer(report, "/itl_ms/count");
  EXPECT_GT(gaps, 0);
  EXPECT_LE(gaps, 24 * 7);
  expect_consistent_latencies(report);
  const std::int64_t peak_open = integer(report, "/peak_open_streams");
  EXPECT_GE(peak_open, 1);
  EXPECT_LE(peak_open, 8);
  EXPECT_GT(integer(report, "/health/probes"), 0);
  EXPECT_EQ(integer(report, "/health/failures"), 0);
  EXPECT_GT(number(report, "/health/max_ms"), 0);
  EXPECT_EQ(integer(report, "/rss/pid"), serve_->pid());
  const std::int64_t baseline = integer(report, "/rss/baseline_kib");
  EXPECT_GT(baseline, 0);
  EXPECT_GE(integer(report, "/rss/peak_kib"), baseline);
  EXPECT_GE(number(report, "/rss/per_stream_kib"), 0);
}

TEST_F(LoadgenServeTest, ChatEndpointStreams) {
  const LoadgenRun run =
      run_loadgen(fmt::format("{} --endpoint chat -c 4 -n 8 --max-tokens 8", url()));
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text << run.stdout_text;
  simdjson::dom::parser parser;
  simdjson::dom::element report;
  ASSERT_EQ(parser.parse(run.json).get(report), simdjson::SUCCESS) << run.json;
  std::string_view endpoint;
  ASSERT_EQ(report["endpoint"].get_string().get(endpoint), simdjson::SUCCESS);
  EXPECT_EQ(endpoint, "chat");
  EXPECT_EQ(integer(report, "/completed"), 8);
  EXPECT_EQ(integer(report, "/errors"), 0);
  EXPECT_EQ(integer(report, "/output_tokens"), 8 * 8);
  expect_consistent_latencies(report);
}

TEST_F(LoadgenServeTest, SweepWritesEveryPointAndAPlot) {
  if (!on_path("gnuplot")) {
    GTEST_SKIP() << "needs gnuplot for --plot (the Debian package gnuplot-nox; scripts/setup.sh)";
  }
  const std::filesystem::path png =
      std::filesystem::temp_directory_path() / fmt::format("tern-loadgen-{}.png", ::getpid());
  const LoadgenRun run = run_loadgen(
      fmt::format("{} --sweep 1,2 -n 4 --max-tokens 8 --plot '{}'", url(), png.string()));
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text << run.stdout_text;
  const std::string image = read_file(png);
  std::filesystem::remove(png);
  ASSERT_GE(image.size(), 8u);
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  simdjson::dom::parser parser;
  simdjson::dom::element report;
  ASSERT_EQ(parser.parse(run.json).get(report), simdjson::SUCCESS) << run.json;
  simdjson::dom::array points;
  ASSERT_EQ(report["sweep"].get_array().get(points), simdjson::SUCCESS) << run.json;
  ASSERT_EQ(points.size(), 2u);
  std::int64_t concurrency = 1;
  for (simdjson::dom::element point : points) {
    EXPECT_EQ(integer(point, "/concurrency"), concurrency);
    EXPECT_EQ(integer(point, "/requests"), 4);
    EXPECT_EQ(integer(point, "/completed"), 4);
    EXPECT_EQ(integer(point, "/output_tokens"), 4 * 8);
    expect_consistent_latencies(point);
    concurrency *= 2;
  }
}

TEST(LoadgenDirectTest, EngineModeRunsTheSameWorkloadInProcess) {
  TERN_REQUIRE_SHARED(model, kModel);
  const LoadgenRun run =
      run_loadgen(fmt::format("--engine '{}' -c 4 -n 8 --max-tokens 8", model.string()));
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text << run.stdout_text;
  simdjson::dom::parser parser;
  simdjson::dom::element report;
  ASSERT_EQ(parser.parse(run.json).get(report), simdjson::SUCCESS) << run.json;
  std::string_view mode;
  ASSERT_EQ(report["mode"].get_string().get(mode), simdjson::SUCCESS);
  EXPECT_EQ(mode, "engine");
  EXPECT_EQ(integer(report, "/completed"), 8);
  EXPECT_EQ(integer(report, "/errors"), 0);
  EXPECT_EQ(integer(report, "/output_tokens"), 64);
  EXPECT_LE(integer(report, "/peak_open_streams"), 4);
  expect_consistent_latencies(report);
}

TEST(LoadgenUnreachableTest, NothingListeningFailsEveryRequestAsAConnectError) {
  const int port = free_port();
  const LoadgenRun run =
      run_loadgen(fmt::format("--url http://127.0.0.1:{} --model m -c 2 -n 4", port));
  EXPECT_NE(run.exit_code, 0);
  simdjson::dom::parser parser;
  simdjson::dom::element report;
  ASSERT_EQ(parser.parse(run.json).get(report), simdjson::SUCCESS) << run.json;
  EXPECT_EQ(integer(report, "/completed"), 0);
  EXPECT_EQ(integer(report, "/errors"), 4);
  EXPECT_EQ(integer(report, "/errors_by_kind/connect"), 4);
  EXPECT_NE(run.stderr_text.find("Connection refused"), std::string::npos) << run.stderr_text;
}

TEST(LoadgenUnreachableTest, WithoutAModelItSaysTheServerCannotBeReached) {
  const int port = free_port();
  const LoadgenRun run = run_loadgen(fmt::format("--url http://127.0.0.1:{}", port));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.stderr_text.find("cannot connect to http://127.0.0.1:"), std::string::npos)
      << run.stderr_text;
}

TEST(LoadgenUsageTest, BadFlagsExitWithUsageErrors) {
  EXPECT_EQ(run_loadgen("--concurrency 0").exit_code, 2);
  EXPECT_EQ(run_loadgen("--endpoint embeddings").exit_code, 2);
  EXPECT_EQ(run_loadgen("--url https://example.com").exit_code, 2);
  EXPECT_EQ(run_loadgen("--plot x.png").exit_code, 2);
}

}  // namespace
}  // namespace tern::testing
