#include "service/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

namespace tern::service {
namespace {

EnvironmentLookup fake_environment(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](std::string_view name) -> std::optional<std::string> {
    const auto found = variables.find(std::string(name));
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

const EnvironmentLookup kNoEnvironment = fake_environment({});

std::string error_of(std::string_view yaml, const EnvironmentLookup& env = kNoEnvironment) {
  const auto config = parse_config(yaml, "test.yaml", env);
  EXPECT_FALSE(config.ok()) << "expected an error for:\n" << yaml;
  return config.ok() ? std::string() : config.error().message;
}

constexpr std::string_view kMinimal = "models:\n  - name: m\n    path: /m.gguf\n";

TEST(Config, MinimalFileGetsDefaults) {
  const auto config = parse_config(kMinimal, "test.yaml", kNoEnvironment);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server.host, "0.0.0.0");
  EXPECT_EQ(config->server.port, 8000);
  EXPECT_EQ(config->server.io_threads, 1);
  EXPECT_EQ(config->server.compute_nice, 10);
  EXPECT_EQ(config->server.control_nice, -10);
  EXPECT_TRUE(config->server.api_keys.empty());
  EXPECT_EQ(config->logging.level, "info");
  EXPECT_EQ(config->logging.format, LogFormat::text);
  ASSERT_EQ(config->models.size(), 1u);
  const ModelConfig& m = config->models[0];
  EXPECT_EQ(m.name, "m");
  EXPECT_EQ(m.path, "/m.gguf");
  EXPECT_EQ(m.backend, "cpu");
  EXPECT_EQ(m.max_num_seqs, 64);
  EXPECT_EQ(m.max_num_batched_tokens, 2048);
  EXPECT_FALSE(m.kv_cache_bytes.has_value());  // the backend decides (docs/config.md)
  EXPECT_EQ(m.block_size, 16);
  EXPECT_EQ(m.kv_cache_dtype, "f16");
  EXPECT_TRUE(m.enable_prefix_caching);
  EXPECT_FALSE(m.required);
  EXPECT_FALSE(m.sampling.temperature.has_value());
  EXPECT_FALSE(m.gpu_memory_utilization.has_value());
  EXPECT_FALSE(m.cuda_graphs.has_value());
  EXPECT_FALSE(config->emulated_device.count.has_value());
  EXPECT_FALSE(config->emulated_device.memory_bytes.has_value());
}

TEST(Config, ReadsEveryField) {
  const std::string yaml = R"(
server:
  host: 127.0.0.1
  port: 9000
  io_threads: 4
  compute_nice: 5
  control_nice: 0
  api_keys: [a, b]
  protect_operational_endpoints: true
  limits: {max_body_bytes: 1MiB, max_header_bytes: 8KiB, max_connections: 100,
           stream_buffer_bytes: 64KiB}
  timeouts: {header_s: 1, body_s: 2, idle_s: 3, drain_s: 4.5, slow_client_s: 6,
             sse_keepalive_s: 7}
logging: {level: debug, format: json}
models:
  - name: big
    path: /models/big
    aliases: [b1, b2]
    backend: cuda
    devices: [0, 1]
    gpu_memory_utilization: 0.8
    cuda_graphs: false
    threads: 2
    max_model_len: 4096
    max_num_seqs: 8
    max_num_batched_tokens: 512
    max_waiting_requests: 10
    kv_cache_bytes: 2GB
    block_size: 32
    kv_cache_dtype: bf16
    enable_prefix_caching: false
    chat_template: /t.jinja
    tool_parser: hermes
    reasoning_parser: qwen3
    required: true
    sampling: {temperature: 0.5, top_p: 0.9, top_k: 40, min_p: 0.05, repetition_penalty: 1.1,
               presence_penalty: 0.5, frequency_penalty: -0.5, max_tokens: 100, seed: 42}
)";
  const auto config = parse_config(yaml, "test.yaml", kNoEnvironment);
  ASSERT_TRUE(config.ok()) << config.error().message;
  const ServerConfig& s = config->server;
  EXPECT_EQ(s.host, "127.0.0.1");
  EXPECT_EQ(s.port, 9000);
  EXPECT_EQ(s.io_threads, 4);
  EXPECT_EQ(s.compute_nice, 5);
  EXPECT_EQ(s.control_nice, 0);
  EXPECT_EQ(s.api_keys, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(s.protect_operational_endpoints);
  EXPECT_EQ(s.limits.max_body_bytes, 1u << 20);
  EXPECT_EQ(s.limits.max_header_bytes, 8u << 10);
  EXPECT_EQ(s.limits.max_connections, 100);
  EXPECT_EQ(s.limits.stream_buffer_bytes, 64u << 10);
  EXPECT_DOUBLE_EQ(s.timeouts.header_s, 1);
  EXPECT_DOUBLE_EQ(s.timeouts.body_s, 2);
  EXPECT_DOUBLE_EQ(s.timeouts.idle_s, 3);
  EXPECT_DOUBLE_EQ(s.timeouts.drain_s, 4.5);
  EXPECT_DOUBLE_EQ(s.timeouts.slow_client_s, 6);
  EXPECT_DOUBLE_EQ(s.timeouts.sse_keepalive_s, 7);
  EXPECT_EQ(config->logging.level, "debug");
  EXPECT_EQ(config->logging.format, LogFormat::json);
  const ModelConfig& m = config->models.at(0);
  EXPECT_EQ(m.aliases, (std::vector<std::string>{"b1", "b2"}));
  EXPECT_EQ(m.backend, "cuda");
  EXPECT_EQ(m.devices, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(*m.gpu_memory_utilization, 0.8);
  EXPECT_FALSE(*m.cuda_graphs);
  EXPECT_EQ(m.threads, 2);
  EXPECT_EQ(m.max_model_len, 4096);
  EXPECT_EQ(m.max_num_seqs, 8);
  EXPECT_EQ(m.max_num_batched_tokens, 512);
  EXPECT_EQ(m.max_waiting_sequences, 10);
  EXPECT_EQ(m.kv_cache_bytes, 2000000000ull);
  EXPECT_EQ(m.block_size, 32);
  EXPECT_EQ(m.kv_cache_dtype, "bf16");
  EXPECT_FALSE(m.enable_prefix_caching);
  EXPECT_EQ(m.chat_template, "/t.jinja");
  EXPECT_EQ(m.tool_parser, "hermes");
  EXPECT_EQ(m.reasoning_parser, "qwen3");
  EXPECT_TRUE(m.required);
  EXPECT_DOUBLE_EQ(*m.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(*m.sampling.top_p, 0.9);
  EXPECT_EQ(*m.sampling.top_k, 40);
  EXPECT_DOUBLE_EQ(*m.sampling.min_p, 0.05);
  EXPECT_DOUBLE_EQ(*m.sampling.repetition_penalty, 1.1);
  EXPECT_DOUBLE_EQ(*m.sampling.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(*m.sampling.frequency_penalty, -0.5);
  EXPECT_EQ(*m.sampling.max_tokens, 100);
  EXPECT_EQ(*m.sampling.seed, 42u);
}

TEST(Config, ReadsTheEmulatedMachine) {
  const std::string yaml = R"(
emulated_device:
  count: 4
  memory_bytes: 512MiB
models:
  - name: emulated
    path: /m.gguf
    backend: cuda-emulated
    devices: [3, 0]
    gpu_memory_utilization: 1
)";
  const auto config = parse_config(yaml, "test.yaml", kNoEnvironment);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(*config->emulated_device.count, 4);
  EXPECT_EQ(*config->emulated_device.memory_bytes, 512ull << 20);
  const ModelConfig& m = config->models.at(0);
  EXPECT_EQ(m.backend, "cuda-emulated");
  EXPECT_EQ(m.devices, (std::vector<int>{3, 0}));
  EXPECT_DOUBLE_EQ(*m.gpu_memory_utilization, 1.0);
  EXPECT_EQ(config->origin.lines.at("emulated_device.count"), 3);
}

// cuda-emulated models take devices as cuda ones do, counted against the emulated machine,
// which the file itself describes (one device unless emulated_device.count says more).
TEST(Config, CudaEmulatedDevicesAreTheEmulatedMachines) {
  const std::string model =
      "models:\n  - name: a\n    path: /a\n    backend: cuda-emulated\n    devices: [0, 1]\n";
  EXPECT_EQ(error_of(model),
            "test.yaml:5: models[0].devices[1] is emulated device 1, but emulated_device.count "
            "is 1");
  EXPECT_EQ(error_of("emulated_device: {count: 1}\n" + model),
            "test.yaml:6: models[0].devices[1] is emulated device 1, but emulated_device.count "
            "is 1");
  EXPECT_TRUE(parse_config("emulated_device: {count: 2}\n" + model, "t.yaml", kNoEnvironment).ok());
  // Devices of a cuda model are the real machine's: --check warns, the file is valid.
  EXPECT_TRUE(
      parse_config("models:\n  - name: a\n    path: /a\n    backend: cuda\n    devices: [0, 5]\n",
                   "t.yaml", kNoEnvironment)
          .ok());
}

// tensor_parallel: N splits the model over N devices: devices 0..N-1, or the N that `devices`
// lists. Unset is 0: as many as `devices` lists, else one.
TEST(Config, ReadsTensorParallel) {
  const auto alone = parse_config(
      "models:\n  - name: a\n    path: /a\n    backend: cuda\n    tensor_parallel: 2\n", "t.yaml",
      kNoEnvironment);
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  EXPECT_EQ(alone->models[0].tensor_parallel, 2);
  EXPECT_TRUE(alone->models[0].devices.empty());
  EXPECT_EQ(alone->origin.lines.at("models[0].tensor_parallel"), 5);
  const auto both = parse_config(
      "models:\n  - name: a\n    path: /a\n    backend: cuda\n    devices: [1, 0]\n    "
      "tensor_parallel: 2\n",
      "t.yaml", kNoEnvironment);
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_EQ(both->models[0].tensor_parallel, 2);
  EXPECT_EQ(both->models[0].devices, (std::vector<int>{1, 0}));
  const auto emulated = parse_config(
      "emulated_device: {count: 2}\nmodels:\n  - name: a\n    path: /a\n    backend: "
      "cuda-emulated\n    tensor_parallel: 2\n",
      "t.yaml", kNoEnvironment);
  ASSERT_TRUE(emulated.ok()) << emulated.error().message;
  EXPECT_EQ(emulated->models[0].tensor_parallel, 2);
  // One rank is what the CPU runs anyway.
  const auto cpu =
      parse_config(std::string(kMinimal) + "    tensor_parallel: 1\n", "t.yaml", kNoEnvironment);
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  EXPECT_EQ(cpu->models[0].tensor_parallel, 1);
  const auto unset = parse_config(kMinimal, "t.yaml", kNoEnvironment);
  ASSERT_TRUE(unset.ok());
  EXPECT_EQ(unset->models[0].tensor_parallel, 0);
}

TEST(Config, TensorParallelErrorsNameTheKey) {
  const std::string models(kMinimal);
  const std::string cuda = models + "    backend: cuda\n";
  const std::string emulated = models + "    backend: cuda-emulated\n";
  EXPECT_EQ(error_of(cuda + "    tensor_parallel: 0\n"),
            "test.yaml:5: models[0].tensor_parallel must be >= 1, got '0'");
  EXPECT_EQ(error_of(cuda + "    tensor_parallel: -2\n"),
            "test.yaml:5: models[0].tensor_parallel must be >= 1, got '-2'");
  EXPECT_EQ(error_of(cuda + "    tensor_parallel: two\n"),
            "test.yaml:5: models[0].tensor_parallel must be an integer, got 'two'");
  EXPECT_EQ(error_of(models + "    tensor_parallel: 2\n"),
            "test.yaml:4: models[0].tensor_parallel is 2, which needs backend cuda or "
            "cuda-emulated");
  EXPECT_EQ(error_of(models + "    backend: cpu\n    tensor_parallel: 4\n"),
            "test.yaml:5: models[0].tensor_parallel is 4, which needs backend cuda or "
            "cuda-emulated");
  EXPECT_EQ(error_of(cuda + "    devices: [0, 1, 2]\n    tensor_parallel: 2\n"),
            "test.yaml:6: models[0].tensor_parallel is 2 but devices lists 3 devices ([0, 1, 2])");
  EXPECT_EQ(error_of(cuda + "    tensor_parallel: 2\n    devices: [3]\n"),
            "test.yaml:5: models[0].tensor_parallel is 2 but devices lists 1 device ([3])");
  EXPECT_EQ(error_of("emulated_device: {count: 2}\n" + emulated +
                     "    devices: [0, 1]\n    tensor_parallel: 1\n"),
            "test.yaml:7: models[0].tensor_parallel is 1 but devices lists 2 devices ([0, 1])");
  // Given alone on cuda-emulated, N needs devices 0..N-1 of the emulated machine.
  EXPECT_EQ(error_of(emulated + "    tensor_parallel: 2\n"),
            "test.yaml:5: models[0].tensor_parallel is 2, which needs emulated devices 0..1, but "
            "emulated_device.count is 1");
  EXPECT_EQ(error_of("emulated_device: {count: 2}\n" + emulated + "    tensor_parallel: 4\n"),
            "test.yaml:6: models[0].tensor_parallel is 4, which needs emulated devices 0..3, but "
            "emulated_device.count is 2");
  // A cuda model's devices are the real machine's: --check warns, the file is valid.
  EXPECT_TRUE(parse_config(cuda + "    tensor_parallel: 8\n", "t.yaml", kNoEnvironment).ok());
  EXPECT_EQ(error_of(models + "    tensor_paralel: 2\n"),
            "test.yaml:4: models[0].tensor_paralel is not a known key (did you mean "
            "'tensor_parallel'?)");
}

// The CUDA kernels take f16 and bf16 KV caches only.
TEST(Config, CudaBackendsRefuseAnF32KvCache) {
  for (const std::string backend : {"cuda", "cuda-emulated"}) {
    EXPECT_EQ(error_of("models:\n  - name: a\n    path: /a\n    kv_cache_dtype: f32\n    "
                       "backend: " +
                       backend + "\n"),
              "test.yaml:4: models[0].kv_cache_dtype is f32, which backend " + backend +
                  " does not support (its kernels take f16 and bf16)");
    for (const std::string dtype : {"f16", "bf16"}) {
      EXPECT_TRUE(parse_config("models:\n  - name: a\n    path: /a\n    backend: " + backend +
                                   "\n    kv_cache_dtype: " + dtype + "\n",
                               "t.yaml", kNoEnvironment)
                      .ok())
          << backend << " " << dtype;
    }
  }
  EXPECT_TRUE(
      parse_config(std::string(kMinimal) + "    kv_cache_dtype: f32\n", "t.yaml", kNoEnvironment)
          .ok());
}

// Keys that only a CUDA backend reads are valid with cpu; `tern serve --check` warns about them.
TEST(Config, CudaSettingsAreValidWithTheCpuBackend) {
  const auto config = parse_config(std::string(kMinimal) +
                                       "    gpu_memory_utilization: 0.5\n    cuda_graphs: "
                                       "false\nemulated_device: {count: 2}\n",
                                   "t.yaml", kNoEnvironment);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_DOUBLE_EQ(*config->models[0].gpu_memory_utilization, 0.5);
}

TEST(Config, OutputParsersMustBeKnownNames) {
  const auto bad_tool = parse_config("models:\n  - {name: m, path: /m, tool_parser: qwen}\n",
                                     "t.yaml", kNoEnvironment);
  ASSERT_FALSE(bad_tool.ok());
  EXPECT_NE(bad_tool.error().message.find("models[0].tool_parser"), std::string::npos)
      << bad_tool.error().message;
  EXPECT_NE(bad_tool.error().message.find("hermes, llama3_json, mistral, deepseek_v3 or none"),
            std::string::npos);
  const auto bad_reasoning = parse_config(
      "models:\n  - {name: m, path: /m, reasoning_parser: r1}\n", "t.yaml", kNoEnvironment);
  ASSERT_FALSE(bad_reasoning.ok());
  EXPECT_NE(bad_reasoning.error().message.find("models[0].reasoning_parser"), std::string::npos);
  const auto off =
      parse_config("models:\n  - {name: m, path: /m, tool_parser: none, reasoning_parser: none}\n",
                   "t.yaml", kNoEnvironment);
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(off->models.at(0).tool_parser, "none");
}

TEST(Config, ReadsTheResponsesStore) {
  const std::string models = "models:\n  - {name: m, path: /m}\n";
  const auto defaults = parse_config(models, "test.yaml", kNoEnvironment);
  ASSERT_TRUE(defaults.ok()) << defaults.error().message;
  EXPECT_EQ(defaults->server.responses_store.max_responses, 1000);
  EXPECT_DOUBLE_EQ(defaults->server.responses_store.ttl_s, 3600);
  EXPECT_EQ(defaults->server.responses_store.max_bytes, std::uint64_t{256} << 20);
  EXPECT_DOUBLE_EQ(defaults->server.responses_store.max_share_per_key, 0.25);
  const auto config = parse_config(
      "server:\n  responses_store: {max_responses: 0, max_bytes: 1GiB, max_share_per_key: 0.5, "
      "ttl_s: 1.5}\n" +
          models,
      "test.yaml", kNoEnvironment);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server.responses_store.max_responses, 0);
  EXPECT_EQ(config->server.responses_store.max_bytes, std::uint64_t{1} << 30);
  EXPECT_DOUBLE_EQ(config->server.responses_store.max_share_per_key, 0.5);
  EXPECT_DOUBLE_EQ(config->server.responses_store.ttl_s, 1.5);
  const std::string dumped = dump_config(*config);
  EXPECT_NE(dumped.find("responses_store:\n    max_responses: 0\n    max_bytes: 1073741824\n    "
                        "max_share_per_key: 0.5\n    ttl_s: 1.5"),
            std::string::npos)
      << dumped;
  EXPECT_EQ(error_of("server:\n  responses_store: {max_share_per_key: 0}\n" + models),
            "test.yaml:2: server.responses_store.max_share_per_key must be in (0, 1]");
  EXPECT_EQ(error_of("server:\n  responses_store: {max_share_per_key: 1.5}\n" + models),
            "test.yaml:2: server.responses_store.max_share_per_key must be in (0, 1]");
  EXPECT_EQ(error_of("server:\n  responses_store: {max_responses: -1}\n" + models),
            "test.yaml:2: server.responses_store.max_responses must be >= 0");
  EXPECT_EQ(error_of("server:\n  responses_store: {ttl_s: 0}\n" + models),
            "test.yaml:2: server.responses_store.ttl_s must be > 0 seconds");
  EXPECT_NE(error_of("server:\n  responses_store: {max_response: 5}\n" + models)
                .find("did you mean 'max_responses'"),
            std::string::npos);
}

TEST(Config, ErrorNamesFileLineAndKey) {
  const std::string yaml =
      "server:\n  port: 8000\nmodels:\n  - name: a\n    path: /a\n    max_num_seqs: 0\n";
  EXPECT_EQ(error_of(yaml), "test.yaml:6: models[0].max_num_seqs must be > 0");
}

TEST(Config, UnknownKeySuggestsNearest) {
  EXPECT_EQ(error_of("models:\n  - name: a\n    path: /a\n    max_num_seq: 4\n"),
            "test.yaml:4: models[0].max_num_seq is not a known key (did you mean "
            "'max_num_seqs'?)");
  EXPECT_EQ(error_of("sever:\n  port: 1\n"),
            "test.yaml:1: sever is not a known key (did you mean 'server'?)");
  EXPECT_EQ(error_of(std::string(kMinimal) + "server:\n  limits:\n    max_body: 1\n"),
            "test.yaml:6: server.limits.max_body is not a known key (did you mean "
            "'max_body_bytes'?)");
  EXPECT_EQ(error_of(std::string(kMinimal) + "zzzzzzzz: 1\n"),
            "test.yaml:4: zzzzzzzz is not a known key");
}

TEST(Config, WrongTypes) {
  const std::string models(kMinimal);
  EXPECT_EQ(error_of("server:\n  port: eighty\n" + models),
            "test.yaml:2: server.port must be an integer, got 'eighty'");
  EXPECT_EQ(error_of("server:\n  port: [1]\n" + models),
            "test.yaml:2: server.port must be a scalar value");
  EXPECT_EQ(error_of("server: 5\n" + models), "test.yaml:1: server must be a mapping");
  EXPECT_EQ(error_of("server:\n  api_keys: k\n" + models),
            "test.yaml:2: server.api_keys must be a list");
  EXPECT_EQ(error_of("server:\n  timeouts:\n    idle_s: soon\n" + models),
            "test.yaml:3: server.timeouts.idle_s must be a finite number, got 'soon'");
  EXPECT_EQ(error_of(models + "    enable_prefix_caching: maybe\n"),
            "test.yaml:4: models[0].enable_prefix_caching must be true or false, got 'maybe'");
  EXPECT_EQ(error_of(models + "    kv_cache_bytes: lots\n"),
            "test.yaml:4: models[0].kv_cache_bytes must be a byte size such as 1073741824 or "
            "1GiB, got 'lots'");
  EXPECT_EQ(error_of(models + "    kv_cache_bytes: 3XB\n"),
            "test.yaml:4: models[0].kv_cache_bytes must be a byte size such as 1073741824 or "
            "1GiB, got '3XB'");
  EXPECT_EQ(error_of("server:\n  port: 99999999999\n" + models),
            "test.yaml:2: server.port is out of range: 99999999999");
  EXPECT_EQ(error_of(models + "    devices: 0\n"),
            "test.yaml:4: models[0].devices must be a list of device ordinals");
}

TEST(Config, RangeChecks) {
  const std::string models(kMinimal);
  struct Case {
    std::string yaml, expected;
  };
  const std::vector<Case> cases = {
      {"server:\n  port: 70000\n" + models, "test.yaml:2: server.port must be in 0..65535"},
      {"server:\n  io_threads: 0\n" + models, "test.yaml:2: server.io_threads must be in 1..256"},
      {"server:\n  compute_nice: 20\n" + models,
       "test.yaml:2: server.compute_nice must be in -20..19"},
      {"server:\n  control_nice: -21\n" + models,
       "test.yaml:2: server.control_nice must be in -20..19"},
      {"server:\n  host: ''\n" + models, "test.yaml:2: server.host must not be empty"},
      {"server:\n  api_keys: ['']\n" + models, "test.yaml:2: server.api_keys[0] must not be empty"},
      {"server:\n  limits:\n    max_connections: -1\n" + models,
       "test.yaml:3: server.limits.max_connections must be > 0"},
      {"server:\n  limits:\n    max_body_bytes: 0\n" + models,
       "test.yaml:3: server.limits.max_body_bytes must be > 0"},
      {"server:\n  timeouts:\n    drain_s: 0\n" + models,
       "test.yaml:3: server.timeouts.drain_s must be > 0 seconds"},
      {"logging:\n  level: loud\n" + models,
       "test.yaml:2: logging.level must be one of trace, debug, info, warn, error, critical, "
       "off"},
      {"logging:\n  format: xml\n" + models, "test.yaml:2: logging.format must be text or json"},
      {models + "    backend: tpu\n",
       "test.yaml:4: models[0].backend must be cpu, cuda or cuda-emulated, got 'tpu'"},
      {models + "    backend: cuda_emulated\n",
       "test.yaml:4: models[0].backend must be cpu, cuda or cuda-emulated, got 'cuda_emulated'"},
      {models + "    devices: [0]\n",
       "test.yaml:4: models[0].devices is only valid with backend cuda or cuda-emulated"},
      {models + "    backend: cuda-emulated\n    devices: [0, 0]\n",
       "test.yaml:5: models[0].devices[1] repeats device 0"},
      {models + "    backend: cuda-emulated\n    devices: [-1]\n",
       "test.yaml:5: models[0].devices[0] must be >= 0"},
      {models + "    gpu_memory_utilization: 0\n",
       "test.yaml:4: models[0].gpu_memory_utilization must be in (0, 1], got '0'"},
      {models + "    gpu_memory_utilization: 1.01\n",
       "test.yaml:4: models[0].gpu_memory_utilization must be in (0, 1], got '1.01'"},
      {models + "    gpu_memory_utilization: -0.5\n",
       "test.yaml:4: models[0].gpu_memory_utilization must be in (0, 1], got '-0.5'"},
      {models + "    gpu_memory_utilization: 90%\n",
       "test.yaml:4: models[0].gpu_memory_utilization must be a finite number, got '90%'"},
      {models + "    cuda_graphs: sometimes\n",
       "test.yaml:4: models[0].cuda_graphs must be true or false, got 'sometimes'"},
      {"emulated_device:\n  count: 0\n" + models,
       "test.yaml:2: emulated_device.count must be in 1..16, got '0'"},
      {"emulated_device:\n  count: 17\n" + models,
       "test.yaml:2: emulated_device.count must be in 1..16, got '17'"},
      {"emulated_device:\n  count: two\n" + models,
       "test.yaml:2: emulated_device.count must be an integer, got 'two'"},
      {"emulated_device:\n  memory_bytes: 0\n" + models,
       "test.yaml:2: emulated_device.memory_bytes must be > 0"},
      {"emulated_device:\n  memory_bytes: lots\n" + models,
       "test.yaml:2: emulated_device.memory_bytes must be a byte size such as 1073741824 or 1GiB, "
       "got 'lots'"},
      {"emulated_device:\n  memory: 1GiB\n" + models,
       "test.yaml:2: emulated_device.memory is not a known key (did you mean 'memory_bytes'?)"},
      {"emulated_device: 2\n" + models, "test.yaml:1: emulated_device must be a mapping"},
      {models + "    emulated_devices: 2\n",
       "test.yaml:4: models[0].emulated_devices is not a known key"},
      {models + "    backend: cuda\n    devices: [0, -1]\n",
       "test.yaml:5: models[0].devices[1] must be >= 0"},
      {models + "    backend: cuda\n    devices: [1, 1]\n",
       "test.yaml:5: models[0].devices[1] repeats device 1"},
      {models + "    threads: -2\n",
       "test.yaml:4: models[0].threads must be >= 0 (0 means one per core)"},
      {models + "    max_model_len: 0\n", "test.yaml:4: models[0].max_model_len must be > 0"},
      {models + "    max_num_batched_tokens: -5\n",
       "test.yaml:4: models[0].max_num_batched_tokens must be > 0"},
      {models + "    max_waiting_requests: 0\n",
       "test.yaml:4: models[0].max_waiting_requests must be > 0"},
      {models + "    kv_cache_bytes: 0\n", "test.yaml:4: models[0].kv_cache_bytes must be > 0"},
      {models + "    block_size: 24\n",
       "test.yaml:4: models[0].block_size must be a power of two up to 256"},
      {models + "    kv_cache_dtype: int4\n",
       "test.yaml:4: models[0].kv_cache_dtype must be f16, bf16 or f32"},
      {models + "    sampling:\n      temperature: -1\n",
       "test.yaml:5: models[0].sampling.temperature must be in [0, 100]"},
      {models + "    sampling:\n      top_p: 0\n",
       "test.yaml:5: models[0].sampling.top_p must be in (0, 1]"},
      {models + "    sampling:\n      top_k: -3\n",
       "test.yaml:5: models[0].sampling.top_k must be >= -1 (-1 or 0 disables it)"},
      {models + "    sampling:\n      min_p: 1.5\n",
       "test.yaml:5: models[0].sampling.min_p must be in [0, 1]"},
      {models + "    sampling:\n      repetition_penalty: 0\n",
       "test.yaml:5: models[0].sampling.repetition_penalty must be > 0"},
      {models + "    sampling:\n      presence_penalty: 3\n",
       "test.yaml:5: models[0].sampling.presence_penalty must be in [-2, 2]"},
      {models + "    sampling:\n      frequency_penalty: -3\n",
       "test.yaml:5: models[0].sampling.frequency_penalty must be in [-2, 2]"},
      {models + "    sampling:\n      max_tokens: 0\n",
       "test.yaml:5: models[0].sampling.max_tokens must be > 0"},
      {models + "    sampling:\n      seed: -1\n",
       "test.yaml:5: models[0].sampling.seed must be >= 0"},
      {models + "    sampling:\n      temprature: 1\n",
       "test.yaml:5: models[0].sampling.temprature is not a known key (did you mean "
       "'temperature'?)"},
      {models + "    sampling:\n      temperature: .nan\n",
       "test.yaml:5: models[0].sampling.temperature must be a finite number, got '.nan'"},
  };
  for (const Case& c : cases) EXPECT_EQ(error_of(c.yaml), c.expected) << c.yaml;
}

TEST(Config, ModelListRules) {
  EXPECT_EQ(error_of("server:\n  port: 1\n"),
            "test.yaml:1: models is required: list at least one model");
  EXPECT_EQ(error_of("models: []\n"), "test.yaml:1: models must be a non-empty list of models");
  EXPECT_EQ(error_of("models:\n  - path: /a\n"), "test.yaml:2: models[0].name is required");
  EXPECT_EQ(error_of("models:\n  - name: a\n"), "test.yaml:2: models[0].path is required");
  EXPECT_EQ(error_of("models:\n  - name: ''\n    path: /a\n"),
            "test.yaml:2: models[0].name must not be empty");
  EXPECT_EQ(error_of("models:\n  - name: a\n    path: /a\n  - name: a\n    path: /b\n"),
            "test.yaml:4: models[1].name repeats the name 'a'");
  EXPECT_EQ(
      error_of("models:\n  - name: a\n    path: /a\n  - name: b\n    path: /b\n    aliases: [a]\n"),
      "test.yaml:6: models[1].aliases[0] 'a' is already the name or alias of another model");
  EXPECT_EQ(error_of("models:\n  - just-a-string\n"), "test.yaml:2: models[0] must be a mapping");
}

TEST(Config, MalformedYaml) {
  const std::string message = error_of("models:\n  - name: [unclosed\n");
  EXPECT_EQ(message.rfind("test.yaml:", 0), 0u) << message;
  EXPECT_NE(message.find("invalid YAML"), std::string::npos) << message;
  EXPECT_EQ(error_of(""), "test.yaml:0: config is empty");
  EXPECT_EQ(error_of("just text\n"), "test.yaml:1: config must be a mapping");
}

TEST(Config, HostNamesResolve) {
  const auto config = parse_config("server:\n  host: localhost\n" + std::string(kMinimal),
                                   "test.yaml", kNoEnvironment);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server.host, "localhost");
  const std::string message =
      error_of("server:\n  port: 8000\n  host: not-an-ip\n" + std::string(kMinimal));
  EXPECT_EQ(message.rfind("test.yaml:3: server.host 'not-an-ip' is not an IP address and does "
                          "not resolve",
                          0),
            0u)
      << message;
}

TEST(Config, RepeatedKeysNameBothLines) {
  EXPECT_EQ(error_of("server:\n  port: 1\n  host: 127.0.0.1\n  port: 2\n" + std::string(kMinimal)),
            "test.yaml:4: server.port is given twice, on lines 2 and 4");
  EXPECT_EQ(error_of("models:\n  - name: a\n    path: /a\n    path: /b\n"),
            "test.yaml:4: models[0].path is given twice, on lines 3 and 4");
  EXPECT_EQ(error_of(std::string(kMinimal) + "    sampling: {top_k: 1, top_k: 2}\n"),
            "test.yaml:4: models[0].sampling.top_k is given twice, on lines 4 and 4");
  EXPECT_EQ(error_of(std::string(kMinimal) + "logging: {}\nlogging: {level: info}\n"),
            "test.yaml:5: logging is given twice, on lines 4 and 5");
}

// An alias may refer to its own anchor; walking such a config must end with an error.
TEST(Config, SelfReferentialAliasIsAnError) {
  EXPECT_EQ(error_of(std::string(kMinimal) + "server: &s {limits: [*s]}\n"),
            "test.yaml:4: server.limits must be a mapping");
}

TEST(Config, RecordsTheLineOfEveryValue) {
  const auto config =
      parse_config("server:\n  port: 1\n" + std::string(kMinimal), "test.yaml", kNoEnvironment);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->origin.file, "test.yaml");
  EXPECT_EQ(config->origin.lines.at("server.port"), 2);
  EXPECT_EQ(config->origin.lines.at("models[0].path"), 5);
}

TEST(Config, ExpandsEnvironmentVariables) {
  const auto env = fake_environment({{"KEY", "sk-secret"}, {"PORT", "9100"}});
  const std::string yaml = std::string(
                               "server:\n  port: ${PORT}\n  api_keys: ['${KEY}', "
                               "'pre-${MISSING:-fallback}-post']\n") +
                           std::string(kMinimal);
  const auto config = parse_config(yaml, "test.yaml", env);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->server.port, 9100);
  EXPECT_EQ(config->server.api_keys, (std::vector<std::string>{"sk-secret", "pre-fallback-post"}));
}

TEST(Config, EnvironmentErrors) {
  const std::string models(kMinimal);
  EXPECT_EQ(error_of("server:\n  api_keys: ['${NOPE}']\n" + models),
            "test.yaml:2: server.api_keys[0] refers to environment variable NOPE, which is not "
            "set");
  EXPECT_EQ(error_of("server:\n  host: '${HOST'\n" + models),
            "test.yaml:2: server.host has an unterminated ${...}");
  EXPECT_EQ(error_of("server:\n  host: '${a-b}'\n" + models),
            "test.yaml:2: server.host has an invalid variable name '${a-b}'");
}

TEST(Config, DumpRedactsSecretsAndRoundTrips) {
  const auto env = fake_environment({{"KEY", "sk-secret"}});
  const auto config = parse_config(
      std::string("server:\n  api_keys: ['${KEY}']\n") + std::string(kMinimal), "t.yaml", env);
  ASSERT_TRUE(config.ok());
  const std::string dumped = dump_config(*config);
  EXPECT_EQ(dumped.find("sk-secret"), std::string::npos);
  EXPECT_NE(dumped.find("<redacted>"), std::string::npos);
  const auto reparsed = parse_config(dumped, "dump.yaml", kNoEnvironment);
  ASSERT_TRUE(reparsed.ok()) << reparsed.error().message << "\n" << dumped;
  EXPECT_EQ(reparsed->models[0].kv_cache_bytes, config->models[0].kv_cache_bytes);
  EXPECT_EQ(reparsed->server.port, config->server.port);
}

// The dump fills in the CUDA settings' defaults where a model reads them, and only there, so a
// dumped cpu config checks without warnings about keys it never had.
TEST(Config, DumpFillsInTheCudaDefaultsWhereTheyApply) {
  const auto config = parse_config(
      "models:\n  - name: c\n    path: /c\n  - name: e\n    path: /e\n    backend: "
      "cuda-emulated\n",
      "t.yaml", kNoEnvironment);
  ASSERT_TRUE(config.ok()) << config.error().message;
  const std::string dumped = dump_config(*config);
  const auto reparsed = parse_config(dumped, "dump.yaml", kNoEnvironment);
  ASSERT_TRUE(reparsed.ok()) << reparsed.error().message << "\n" << dumped;
  EXPECT_FALSE(reparsed->models[0].gpu_memory_utilization.has_value()) << dumped;
  EXPECT_FALSE(reparsed->models[0].cuda_graphs.has_value()) << dumped;
  EXPECT_DOUBLE_EQ(reparsed->models[1].gpu_memory_utilization.value_or(0), 0.9) << dumped;
  EXPECT_TRUE(reparsed->models[1].cuda_graphs.value_or(false)) << dumped;
  EXPECT_EQ(reparsed->emulated_device.count.value_or(0), 1) << dumped;
  EXPECT_EQ(reparsed->emulated_device.memory_bytes.value_or(0), 4ull << 30) << dumped;
  const auto cpu_only = parse_config(kMinimal, "t.yaml", kNoEnvironment);
  ASSERT_TRUE(cpu_only.ok());
  EXPECT_EQ(dump_config(*cpu_only).find("emulated_device"), std::string::npos);
  EXPECT_EQ(dump_config(*cpu_only).find("gpu_memory_utilization"), std::string::npos);
}

TEST(Config, DumpWritesTensorParallelWhereItIsSet) {
  const auto config = parse_config(
      "models:\n  - name: c\n    path: /c\n  - name: g\n    path: /g\n    backend: cuda\n    "
      "tensor_parallel: 2\n",
      "t.yaml", kNoEnvironment);
  ASSERT_TRUE(config.ok()) << config.error().message;
  const std::string dumped = dump_config(*config);
  EXPECT_EQ(dumped.find("tensor_parallel"), dumped.rfind("tensor_parallel")) << dumped;
  EXPECT_NE(dumped.find("tensor_parallel: 2"), std::string::npos) << dumped;
  const auto reparsed = parse_config(dumped, "dump.yaml", kNoEnvironment);
  ASSERT_TRUE(reparsed.ok()) << reparsed.error().message << "\n" << dumped;
  EXPECT_EQ(reparsed->models[0].tensor_parallel, 0) << dumped;
  EXPECT_EQ(reparsed->models[1].tensor_parallel, 2) << dumped;
}

// A structured output's bounds: compiles at once per model, and the work of one token's mask.
TEST(Config, ReadsTheStructuredOutputBounds) {
  const auto defaults = parse_config(kMinimal, "t.yaml", kNoEnvironment);
  ASSERT_TRUE(defaults.ok()) << defaults.error().message;
  EXPECT_EQ(defaults->models[0].structured_outputs_max_concurrent_compiles, 2);
  EXPECT_EQ(defaults->models[0].structured_outputs_max_mask_work, 25'000'000);
  const auto set = parse_config(std::string(kMinimal) +
                                    "    structured_outputs_max_concurrent_compiles: 4\n"
                                    "    structured_outputs_max_mask_work: 1000000\n",
                                "t.yaml", kNoEnvironment);
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->models[0].structured_outputs_max_concurrent_compiles, 4);
  EXPECT_EQ(set->models[0].structured_outputs_max_mask_work, 1'000'000);
  const auto reparsed = parse_config(dump_config(*set), "dump.yaml", kNoEnvironment);
  ASSERT_TRUE(reparsed.ok()) << reparsed.error().message;
  EXPECT_EQ(reparsed->models[0].structured_outputs_max_mask_work, 1'000'000);
  EXPECT_NE(error_of(std::string(kMinimal) + "    structured_outputs_max_concurrent_compiles: 0\n")
                .find("models[0].structured_outputs_max_concurrent_compiles"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kMinimal) + "    structured_outputs_max_mask_work: -1\n")
                .find("structured_outputs_max_mask_work"),
            std::string::npos);
}

TEST(Config, MissingFileIsAnError) {
  const auto config = load_config_file("/nonexistent/tern.yaml", kNoEnvironment);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, "/nonexistent/tern.yaml: cannot open config file");
}

TEST(Config, EveryShippedExampleValidates) {
  const std::filesystem::path directory = std::filesystem::path(TERN_SOURCE_DIR) / "config";
  const auto env = fake_environment({{"TERN_API_KEY", "sk-test"}});
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.path().extension() != ".yaml") continue;
    ++examples;
    const auto config = load_config_file(entry.path().string(), env);
    EXPECT_TRUE(config.ok()) << (config.ok() ? "" : config.error().message);
  }
  EXPECT_GE(examples, 3);
}

}  // namespace
}  // namespace tern::service
