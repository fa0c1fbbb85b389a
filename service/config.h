#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expected.h"
#include "engine/sampling_defaults.h"

namespace tern::service {

// A model's `sampling:` block: the engine's type, filled by the config parser.
using SamplingDefaults = engine::SamplingDefaults;

struct ServerLimits {
  std::uint64_t max_body_bytes = 8ull << 20;
  std::uint64_t max_header_bytes = 16ull << 10;
  int max_connections = 16384;
  std::uint64_t stream_buffer_bytes = 256ull << 10;  // per-stream output bound (slow clients)
};

struct ServerTimeouts {
  double header_s = 30;
  double body_s = 60;
  double idle_s = 75;          // keep-alive between requests
  double drain_s = 30;         // SIGTERM: how long in-flight streams may finish
  double slow_client_s = 30;   // a stream over its buffer bound this long is dropped
  double sse_keepalive_s = 5;  // comment lines while a prompt is in prefill
};

// Responses-API answers kept in memory for previous_response_id and GET /v1/responses/{id}.
struct ResponsesStoreConfig {
  int max_responses = 1000;  // the oldest goes first past this; 0 keeps none
  std::uint64_t max_bytes = std::uint64_t{256} << 20;  // the whole store's memory
  double max_share_per_key = 0.25;  // of both bounds, per API key; unused without api_keys
  double ttl_s = 3600;              // each is forgotten this long after it was made
};

struct ServerConfig {
  std::string host = "0.0.0.0";
  int port = 8000;
  int io_threads = 1;
  // Nice values (lower runs first): the compute pool and engine threads yield to the request
  // path, and the control thread (accept, /health) is raised where the system allows it.
  int compute_nice = 10;
  int control_nice = -10;
  std::vector<std::string> api_keys;
  bool protect_operational_endpoints = false;  // /health, /ready, /metrics behind the API key
  ServerLimits limits;
  ServerTimeouts timeouts;
  ResponsesStoreConfig responses_store;
};

enum class LogFormat { text, json };

struct LoggingConfig {
  std::string level = "info";
  LogFormat format = LogFormat::text;
};

struct ModelConfig {
  std::string name;
  std::string path;
  std::vector<std::string> aliases;
  std::string backend = "cpu";  // cpu | cuda | cuda-emulated
  std::vector<int> devices;     // CUDA device ordinals; more than one means tensor parallelism
  // Devices the model is split over, one tensor-parallel rank each; 0 (unset) means as many as
  // `devices` lists, else 1. Given alone, N means devices 0..N-1 (engine::tensor_parallel_devices).
  int tensor_parallel = 0;
  // Read by cuda and cuda-emulated only; unset means the default (engine::CudaOptions), and a
  // value given for a cpu model is a `--check` warning.
  std::optional<double> gpu_memory_utilization;
  std::optional<bool> cuda_graphs;
  int threads = 0;        // CPU compute threads; 0 means one per core
  int max_model_len = 0;  // 0 means the model's own context length
  int max_num_seqs = 64;
  int max_num_batched_tokens = 2048;
  // The waiting queue, in sequences (each prompt x n counts); past it, requests get 429.
  int max_waiting_sequences = 1024;
  int max_sequences_per_request = 256;        // prompts x n of one request; more is a 400
  double max_waiting_share_per_client = 0.5;  // of max_waiting_sequences, per API key or address
  // Unset: 1 GiB on the CPU; on CUDA what gpu_memory_utilization leaves of the device.
  std::optional<std::uint64_t> kv_cache_bytes;
  int block_size = 16;
  std::string kv_cache_dtype = "f16";  // f16 | bf16 | f32
  bool enable_prefix_caching = true;
  std::string chat_template;  // a file path; empty means the model's own template
  // Output parsers by vLLM's names; empty: the ones the chat template implies; "none": off.
  std::string tool_parser;
  std::string reasoning_parser;
  int structured_outputs_compile_timeout_ms = 2000;
  int structured_outputs_max_concurrent_compiles = 2;
  int structured_outputs_max_mask_work = 25'000'000;  // engine::kDefaultGrammarStepWork
  bool required = false;  // a load failure stops the server instead of only this model
  SamplingDefaults sampling;
};

// The top-level `emulated_device` section: the machine every cuda-emulated model of the server
// runs on, as real GPUs are the machine's and not a model's. Unset means the default
// (engine::EmulatedDeviceOptions); a value given with no cuda-emulated model is a `--check`
// warning.
struct EmulatedDeviceConfig {
  std::optional<int> count;                   // 1..engine::kMaxEmulatedDevices
  std::optional<std::uint64_t> memory_bytes;  // global memory of each device
};

// Where a parsed config came from, so checks made after parsing (`tern serve --check`'s
// warnings about the machine) name FILE:LINE as parse errors do.
struct ConfigOrigin {
  std::string file;                  // empty for a config built in code (`tern serve --model`)
  std::map<std::string, int> lines;  // the line of each value, by key path: "models[0].path"
};

struct Config {
  ServerConfig server;
  LoggingConfig logging;
  EmulatedDeviceConfig emulated_device;
  std::vector<ModelConfig> models;
  ConfigOrigin origin;
};

// Looks up an environment variable for `${NAME}` expansion; nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvironmentLookup process_environment();

// Parses and validates YAML text. `source` names the file in error messages, which read
// "source:line: key.path reason". On error nothing is returned, so no config is partly applied.
// A key given twice in one mapping is an error, and server.host must be an IP address or a
// name that resolves here.
Expected<Config> parse_config(std::string_view yaml_text, std::string_view source,
                              const EnvironmentLookup& environment = process_environment());

Expected<Config> load_config_file(const std::string& path,
                                  const EnvironmentLookup& environment = process_environment());

// The effective config (defaults filled in, secrets redacted) as YAML.
std::string dump_config(const Config& config);

}  // namespace tern::service
