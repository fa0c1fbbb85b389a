#pragma once

// tern-loadgen's command line: every flag, its default, and the parser that checks them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/expected.h"

namespace tern::loadgen {

enum class Endpoint { completions, chat };

struct Options {
  std::string url = "http://127.0.0.1:8000";
  std::string host = "127.0.0.1";  // from url
  std::string port = "8000";       // from url
  std::string model;               // empty: the first id of GET /v1/models
  std::string api_key;
  Endpoint endpoint = Endpoint::completions;
  int concurrency = 16;
  int requests = 0;  // 0: as many as the concurrency (a sweep: twice each point's concurrency)
  bool requests_given = false;
  int prompt_words = 64;
  int max_tokens = 32;
  double temperature = 0;
  bool ignore_eos = true;
  std::uint64_t seed = 1;
  double timeout_s = 600;
  bool hold = false;
  int probe_health_ms = 0;
  int server_pid = 0;
  std::string json_path;  // "-" for stdout
  std::vector<int> sweep;
  std::string plot_path;
  std::string engine_model_path;  // direct mode when set
  int threads = 0;                // direct mode compute threads; 0: one per core, as tern serve
  bool help = false;
};

// Parses argv; the error says which flag is wrong and why.
Expected<Options> parse_options(int argc, char** argv);

// The --help text.
std::string usage_text();

}  // namespace tern::loadgen
