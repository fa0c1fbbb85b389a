#pragma once

// `tern serve --config` with one TinyStories model named "ts" on a free loopback port, for the
// tests of the real binary's behaviour. Extra YAML goes into the server section and the model
// entry.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <simdjson.h>

#include "tests/support/http_client.h"
#include "tests/support/serve_process.h"
#include "tests/support/shared_data.h"

namespace tern::testing {

class ServeConfigFixture : public ::testing::Test {
 protected:
  static constexpr const char* kModelDir = "models/tinystories-656k";

  void SetUp() override {
    if (!std::filesystem::exists(shared_path(kModelDir))) {
      GTEST_SKIP() << "needs " << shared_path(kModelDir).string()
                   << " (../shared is absent or incomplete)";
    }
  }
  void TearDown() override {
    serve_.reset();
    if (!config_path_.empty()) std::filesystem::remove(config_path_);
  }

  // Starts the server; with `wait_ready`, waits until /ready is 200 and returns its port (0 on
  // failure or when it exits first).
  int launch(const std::string& model_keys, const std::string& server_keys = {},
             bool wait_ready = true, std::optional<rlim_t> open_file_limit = std::nullopt) {
    config_path_ = std::filesystem::temp_directory_path() /
                   fmt::format("tern-behaviour-{}-{}.yaml", ::getpid(), ++configs_);
    // 64 MiB of KV unless the test sets its own.
    const bool own_kv = model_keys.find("kv_cache_bytes:") != std::string::npos;
    std::ofstream(config_path_) << fmt::format(
        "server:\n  host: 127.0.0.1\n  port: 0\n{}"
        "models:\n  - name: ts\n    path: {}\n{}    required: true\n{}",
        server_keys, shared_path(kModelDir).string(), own_kv ? "" : "    kv_cache_bytes: 64MiB\n",
        model_keys);
    serve_.emplace(TERN_BINARY, std::vector<std::string>{"--config", config_path_.string()},
                   open_file_limit);
    if (!serve_->started() || !wait_ready) return 0;
    const int port = serve_->wait_for_port();
    if (port == 0) return 0;
    HttpClient probe(port);
    for (int i = 0; i < 1000; ++i) {
      if (probe.get("/ready").result_int() == 200) return port;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }

  std::optional<ServeProcess> serve_;
  std::filesystem::path config_path_;
  static inline int configs_ = 0;
};

// The `error` object of an OpenAI error body; null when the body is not one.
inline simdjson::dom::element error_of(simdjson::dom::parser& parser, const std::string& body) {
  simdjson::dom::element root;
  if (parser.parse(body).get(root) != simdjson::SUCCESS) return {};
  simdjson::dom::element error;
  if (root["error"].get(error) != simdjson::SUCCESS) return {};
  return error;
}

}  // namespace tern::testing
