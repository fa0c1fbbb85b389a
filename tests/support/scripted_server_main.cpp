// tern_scripted_server: tern's HTTP server over ScriptedModelService (model "qwen3-scripted"),
// for driving the official SDKs end to end without a model (tests/e2e/sdk_clients/run.sh).
//   tern_scripted_server [--port N] [--api-key KEY] [--tokenizer DIR] [--token-interval-ms N]
// Listens on 127.0.0.1 (port 0, the default, picks a free one) and prints
// "listening on 127.0.0.1:PORT" on stdout once it accepts. SIGTERM or SIGINT drains and exits 0.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "service/server.h"
#include "tests/support/scripted_model_service.h"

namespace {

struct Options {
  int port = 0;
  std::string api_key;
  std::string tokenizer = TERN_SHARED_DIR "/tokenizers/qwen3";
  int token_interval_ms = 1;
};

bool parse(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view name = argv[i];
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    if (name == "--port") {
      options.port = std::atoi(value);
    } else if (name == "--api-key") {
      options.api_key = value;
    } else if (name == "--tokenizer") {
      options.tokenizer = value;
    } else if (name == "--token-interval-ms") {
      options.token_interval_ms = std::atoi(value);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tern;
  Options options;
  if (!parse(argc, argv, options)) {
    fmt::print(stderr,
               "usage: tern_scripted_server [--port N] [--api-key KEY] [--tokenizer DIR] "
               "[--token-interval-ms N]\n");
    return 2;
  }
  auto tokenizer = engine::Tokenizer::load(options.tokenizer);
  if (!tokenizer) {
    fmt::print(stderr, "tokenizer {}: {}\n", options.tokenizer, tokenizer.error().message);
    return 1;
  }
  testing::ScriptedModelService models(std::move(*tokenizer),
                                       std::chrono::milliseconds(options.token_interval_ms));
  service::ServerConfig config;
  config.host = "127.0.0.1";
  config.port = options.port;
  config.io_threads = 2;
  config.timeouts.drain_s = 5;
  if (!options.api_key.empty()) config.api_keys.push_back(options.api_key);
  service::ServiceMetrics metrics;
  service::Server server(config, models, metrics, service::Server::Options{true, 2});
  if (Status started = server.start(); !started.ok()) {
    fmt::print(stderr, "{}\n", started.message());
    return 1;
  }
  fmt::print("listening on 127.0.0.1:{}\n", server.port());
  std::fflush(stdout);
  server.run();
  return 0;
}
