#include "service/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "engine/backend/backend_spec.h"
#include "engine/chat/output_parser.h"
#include "service/byte_size.h"
#include "service/host_address.h"

namespace tern::service {
namespace {

// Thrown inside this file only; parse_config turns it into an Error at the boundary.
struct ConfigError {
  std::string message;
};

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
    }
  }
  return row[b.size()];
}

// Walks the YAML tree with the dotted path of the current node, so every error can name the
// file, the line and the key.
class Reader {
 public:
  Reader(std::string_view source, const EnvironmentLookup& environment,
         std::map<std::string, int>& lines)
      : source_(source), environment_(environment), lines_(lines) {}

  [[noreturn]] void fail(const YAML::Node& node, std::string_view path,
                         std::string_view reason) const {
    const int line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
    throw ConfigError{fmt::format("{}:{}: {} {}", source_, line, path, reason)};
  }

  // Every key of `map` must be one of `known`; an unknown one suggests the nearest known key.
  void expect_keys(const YAML::Node& map, std::string_view path,
                   std::initializer_list<std::string_view> known) const {
    if (!map.IsMap()) fail(map, path, "must be a mapping");
    for (const auto& entry : map) {
      const std::string key = entry.first.Scalar();
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      std::string_view nearest;
      std::size_t best = std::numeric_limits<std::size_t>::max();
      for (std::string_view candidate : known) {
        const bool prefix =
            candidate.starts_with(key) || std::string_view(key).starts_with(candidate);
        const std::size_t distance = prefix ? 0 : edit_distance(key, candidate);
        if (distance < best) best = distance, nearest = candidate;
      }
      const std::string full = path.empty() ? key : fmt::format("{}.{}", path, key);
      if (best <= std::max<std::size_t>(2, key.size() / 3)) {
        fail(entry.first, full, fmt::format("is not a known key (did you mean '{}'?)", nearest));
      }
      fail(entry.first, full, "is not a known key");
    }
  }

  // The scalar text after `${NAME}` / `${NAME:-default}` expansion.
  std::string scalar(const YAML::Node& node, std::string_view path) const {
    if (!node.IsScalar()) fail(node, path, "must be a scalar value");
    lines_[std::string(path)] = node.Mark().line + 1;
    const std::string& raw = node.Scalar();
    std::string out;
    std::size_t i = 0;
    while (i < raw.size()) {
      if (raw.compare(i, 2, "${") != 0) {
        out += raw[i++];
        continue;
      }
      const std::size_t close = raw.find('}', i + 2);
      if (close == std::string::npos) fail(node, path, "has an unterminated ${...}");
      std::string_view body(raw.data() + i + 2, close - i - 2);
      std::optional<std::string> fallback;
      if (const auto dash = body.find(":-"); dash != std::string_view::npos) {
        fallback = std::string(body.substr(dash + 2));
        body = body.substr(0, dash);
      }
      const bool valid_name = !body.empty() && std::all_of(body.begin(), body.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      });
      if (!valid_name)
        fail(node, path, fmt::format("has an invalid variable name '${{{}}}'", body));
      std::optional<std::string> value = environment_(body);
      if (!value && !fallback) {
        fail(node, path, fmt::format("refers to environment variable {}, which is not set", body));
      }
      out += value ? *value : *fallback;
      i = close + 1;
    }
    return out;
  }

  std::string string(const YAML::Node& node, std::string_view path) const {
    return scalar(node, path);
  }

  long long integer(const YAML::Node& node, std::string_view path) const {
    const std::string text = scalar(node, path);
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno == ERANGE) {
      fail(node, path, fmt::format("must be an integer, got '{}'", text));
    }
    return value;
  }

  int int32(const YAML::Node& node, std::string_view path) const {
    const long long value = integer(node, path);
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
      fail(node, path, fmt::format("is out of range: {}", value));
    }
    return static_cast<int>(value);
  }

  double number(const YAML::Node& node, std::string_view path) const {
    const std::string text = scalar(node, path);
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(value)) {
      fail(node, path, fmt::format("must be a finite number, got '{}'", text));
    }
    return value;
  }

  bool boolean(const YAML::Node& node, std::string_view path) const {
    const std::string text = scalar(node, path);
    if (text == "true" || text == "True" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "False" || text == "no" || text == "off") return false;
    fail(node, path, fmt::format("must be true or false, got '{}'", text));
  }

  // A byte count: an integer, or a number with a unit such as 512MiB, 4GiB or 2GB.
  std::uint64_t bytes(const YAML::Node& node, std::string_view path) const {
    const std::string text = scalar(node, path);
    if (const auto size = parse_byte_size(text)) return *size;
    fail(node, path, fmt::format("must be a byte size such as 1073741824 or 1GiB, got '{}'", text));
  }

  std::vector<std::string> string_list(const YAML::Node& node, std::string_view path) const {
    if (!node.IsSequence()) fail(node, path, "must be a list");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < node.size(); ++i) {
      out.push_back(string(node[i], fmt::format("{}[{}]", path, i)));
    }
    return out;
  }

 private:
  std::string source_;
  const EnvironmentLookup& environment_;
  std::map<std::string, int>& lines_;  // every scalar read, for ConfigOrigin
};

std::string join_path(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key) : fmt::format("{}.{}", parent, key);
}

// yaml-cpp keeps every pair of a mapping but answers a lookup with the first, while the readers
// below loop over all pairs, so a repeated key would take one value or the other unnoticed.
// An alias may refer to its own anchor; `ancestors` stops the walk going round such a cycle.
void reject_repeated_keys(const Reader& r, const YAML::Node& node, const std::string& path,
                          std::vector<YAML::Node>& ancestors) {
  for (const YAML::Node& ancestor : ancestors) {
    if (ancestor.is(node)) return;
  }
  ancestors.push_back(node);
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      reject_repeated_keys(r, node[i], fmt::format("{}[{}]", path, i), ancestors);
    }
  } else if (node.IsMap()) {
    std::map<std::string, int> first_lines;
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) continue;
      const std::string key_path = join_path(path, entry.first.Scalar());
      const int line = entry.first.Mark().line + 1;
      if (const auto [first, inserted] = first_lines.emplace(entry.first.Scalar(), line);
          !inserted) {
        r.fail(entry.first, key_path,
               fmt::format("is given twice, on lines {} and {}", first->second, line));
      }
      reject_repeated_keys(r, entry.second, key_path, ancestors);
    }
  }
  ancestors.pop_back();
}

void read_limits(const Reader& r, const YAML::Node& node, ServerLimits& limits) {
  const std::string base = "server.limits";
  r.expect_keys(node, base,
                {"max_body_bytes", "max_header_bytes", "max_connections", "stream_buffer_bytes"});
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const std::string path = join_path(base, key);
    const YAML::Node& value = entry.second;
    if (key == "max_connections") {
      limits.max_connections = r.int32(value, path);
      if (limits.max_connections <= 0) r.fail(value, path, "must be > 0");
      continue;
    }
    const std::uint64_t size = r.bytes(value, path);
    if (size == 0) r.fail(value, path, "must be > 0");
    if (key == "max_body_bytes") limits.max_body_bytes = size;
    if (key == "max_header_bytes") limits.max_header_bytes = size;
    if (key == "stream_buffer_bytes") limits.stream_buffer_bytes = size;
  }
}

void read_timeouts(const Reader& r, const YAML::Node& node, ServerTimeouts& timeouts) {
  const std::string base = "server.timeouts";
  r.expect_keys(node, base,
                {"header_s", "body_s", "idle_s", "drain_s", "slow_client_s", "sse_keepalive_s"});
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const std::string path = join_path(base, key);
    const double seconds = r.number(entry.second, path);
    if (seconds <= 0) r.fail(entry.second, path, "must be > 0 seconds");
    double* target = key == "header_s"        ? &timeouts.header_s
                     : key == "body_s"        ? &timeouts.body_s
                     : key == "idle_s"        ? &timeouts.idle_s
                     : key == "drain_s"       ? &timeouts.drain_s
                     : key == "slow_client_s" ? &timeouts.slow_client_s
                                              : &timeouts.sse_keepalive_s;
    *target = seconds;
  }
}

void read_responses_store(const Reader& r, const YAML::Node& node, ResponsesStoreConfig& store) {
  const std::string base = "server.responses_store";
  r.expect_keys(node, base, {"max_responses", "max_bytes", "max_share_per_key", "ttl_s"});
  if (const YAML::Node count = node["max_responses"]) {
    store.max_responses = r.int32(count, base + ".max_responses");
    if (store.max_responses < 0) r.fail(count, base + ".max_responses", "must be >= 0");
  }
  if (const YAML::Node bytes = node["max_bytes"]) {
    store.max_bytes = r.bytes(bytes, base + ".max_bytes");
  }
  if (const YAML::Node share = node["max_share_per_key"]) {
    store.max_share_per_key = r.number(share, base + ".max_share_per_key");
    if (store.max_share_per_key <= 0 || store.max_share_per_key > 1) {
      r.fail(share, base + ".max_share_per_key", "must be in (0, 1]");
    }
  }
  if (const YAML::Node ttl = node["ttl_s"]) {
    store.ttl_s = r.number(ttl, base + ".ttl_s");
    if (store.ttl_s <= 0) r.fail(ttl, base + ".ttl_s", "must be > 0 seconds");
  }
}

void read_server(const Reader& r, const YAML::Node& node, ServerConfig& server) {
  r.expect_keys(node, "server",
                {"host", "port", "io_threads", "compute_nice", "control_nice", "api_keys",
                 "protect_operational_endpoints", "limits", "timeouts", "responses_store"});
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const std::string path = join_path("server", key);
    const YAML::Node& value = entry.second;
    if (key == "host") {
      server.host = r.string(value, path);
      if (server.host.empty()) r.fail(value, path, "must not be empty");
      if (const auto address = resolve_host(server.host); !address) {
        r.fail(value, path, address.error().message);
      }
    } else if (key == "port") {
      server.port = r.int32(value, path);
      if (server.port < 0 || server.port > 65535) r.fail(value, path, "must be in 0..65535");
    } else if (key == "io_threads") {
      server.io_threads = r.int32(value, path);
      if (server.io_threads < 1 || server.io_threads > 256) {
        r.fail(value, path, "must be in 1..256");
      }
    } else if (key == "compute_nice" || key == "control_nice") {
      int& nice = key == "compute_nice" ? server.compute_nice : server.control_nice;
      nice = r.int32(value, path);
      if (nice < -20 || nice > 19) r.fail(value, path, "must be in -20..19");
    } else if (key == "api_keys") {
      server.api_keys = r.string_list(value, path);
      for (std::size_t i = 0; i < server.api_keys.size(); ++i) {
        if (server.api_keys[i].empty()) {
          r.fail(value[i], fmt::format("{}[{}]", path, i), "must not be empty");
        }
      }
    } else if (key == "protect_operational_endpoints") {
      server.protect_operational_endpoints = r.boolean(value, path);
    } else if (key == "limits") {
      read_limits(r, value, server.limits);
    } else if (key == "timeouts") {
      read_timeouts(r, value, server.timeouts);
    } else if (key == "responses_store") {
      read_responses_store(r, value, server.responses_store);
    }
  }
}

void read_logging(const Reader& r, const YAML::Node& node, LoggingConfig& logging) {
  r.expect_keys(node, "logging", {"level", "format"});
  if (const YAML::Node level = node["level"]) {
    logging.level = r.string(level, "logging.level");
    static const std::set<std::string> kLevels = {"trace", "debug",    "info", "warn",
                                                  "error", "critical", "off"};
    if (!kLevels.contains(logging.level)) {
      r.fail(level, "logging.level",
             "must be one of trace, debug, info, warn, error, critical, off");
    }
  }
  if (const YAML::Node format = node["format"]) {
    const std::string text = r.string(format, "logging.format");
    if (text == "text") {
      logging.format = LogFormat::text;
    } else if (text == "json") {
      logging.format = LogFormat::json;
    } else {
      r.fail(format, "logging.format", "must be text or json");
    }
  }
}

void read_sampling(const Reader& r, const YAML::Node& node, const std::string& base,
                   SamplingDefaults& sampling) {
  r.expect_keys(node, base,
                {"temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
                 "frequency_penalty", "max_tokens", "seed"});
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const std::string path = join_path(base, key);
    const YAML::Node& value = entry.second;
    if (key == "top_k") {
      sampling.top_k = r.int32(value, path);
      if (*sampling.top_k < -1) r.fail(value, path, "must be >= -1 (-1 or 0 disables it)");
    } else if (key == "max_tokens") {
      sampling.max_tokens = r.int32(value, path);
      if (*sampling.max_tokens <= 0) r.fail(value, path, "must be > 0");
    } else if (key == "seed") {
      const long long seed = r.integer(value, path);
      if (seed < 0) r.fail(value, path, "must be >= 0");
      sampling.seed = static_cast<std::uint64_t>(seed);
    } else {
      const double number = r.number(value, path);
      if (key == "temperature") {
        if (number < 0 || number > 100) r.fail(value, path, "must be in [0, 100]");
        sampling.temperature = number;
      } else if (key == "top_p") {
        if (number <= 0 || number > 1) r.fail(value, path, "must be in (0, 1]");
        sampling.top_p = number;
      } else if (key == "min_p") {
        if (number < 0 || number > 1) r.fail(value, path, "must be in [0, 1]");
        sampling.min_p = number;
      } else if (key == "repetition_penalty") {
        if (number <= 0) r.fail(value, path, "must be > 0");
        sampling.repetition_penalty = number;
      } else if (key == "presence_penalty" || key == "frequency_penalty") {
        if (number < -2 || number > 2) r.fail(value, path, "must be in [-2, 2]");
        (key == "presence_penalty" ? sampling.presence_penalty : sampling.frequency_penalty) =
            number;
      }
    }
  }
}

// The emulated machine is read before the models, whose devices it bounds.
void read_emulated_device(const Reader& r, const YAML::Node& node, EmulatedDeviceConfig& emulated) {
  const std::string base = "emulated_device";
  r.expect_keys(node, base, {"count", "memory_bytes"});
  if (const YAML::Node count = node["count"]) {
    const std::string path = join_path(base, "count");
    emulated.count = r.int32(count, path);
    if (*emulated.count < 1 || *emulated.count > engine::kMaxEmulatedDevices) {
      r.fail(
          count, path,
          fmt::format("must be in 1..{}, got '{}'", engine::kMaxEmulatedDevices, *emulated.count));
    }
  }
  if (const YAML::Node memory = node["memory_bytes"]) {
    const std::string path = join_path(base, "memory_bytes");
    emulated.memory_bytes = r.bytes(memory, path);
    if (*emulated.memory_bytes == 0) r.fail(memory, path, "must be > 0");
  }
}

// "0, 1, 2" (fmt::join trips GCC's -Wstringop-overflow in fmt 9 here).
std::string device_list(const std::vector<int>& devices) {
  std::string list;
  for (const int device : devices) list += (list.empty() ? "" : ", ") + std::to_string(device);
  return list;
}

// Rules between keys, once the whole model is read: `devices`, `tensor_parallel` and
// `kv_cache_dtype` depend on the backend, `tensor_parallel` on `devices`, and a cuda-emulated
// model's devices on the emulated machine (engine::tensor_parallel_devices' rules, with lines).
void check_model_backend(const Reader& r, const YAML::Node& node, const std::string& base,
                         const ModelConfig& model, int emulated_devices) {
  const engine::BackendKind kind = *engine::parse_backend_kind(model.backend);
  if (!engine::is_cuda(kind) && !model.devices.empty()) {
    r.fail(node["devices"], join_path(base, "devices"),
           "is only valid with backend cuda or cuda-emulated");
  }
  const std::string tensor_parallel = join_path(base, "tensor_parallel");
  if (!engine::is_cuda(kind) && model.tensor_parallel > 1) {
    r.fail(node["tensor_parallel"], tensor_parallel,
           fmt::format("is {}, which needs backend cuda or cuda-emulated", model.tensor_parallel));
  }
  if (model.tensor_parallel > 0 && !model.devices.empty() &&
      static_cast<std::size_t>(model.tensor_parallel) != model.devices.size()) {
    r.fail(node["tensor_parallel"], tensor_parallel,
           fmt::format("is {} but devices lists {} device{} ([{}])", model.tensor_parallel,
                       model.devices.size(), model.devices.size() == 1 ? "" : "s",
                       device_list(model.devices)));
  }
  if (engine::is_cuda(kind) && model.kv_cache_dtype == "f32") {
    r.fail(node["kv_cache_dtype"], join_path(base, "kv_cache_dtype"),
           fmt::format("is f32, which backend {} does not support (its kernels take f16 and bf16)",
                       model.backend));
  }
  if (kind != engine::BackendKind::cuda_emulated) return;
  if (model.devices.empty() && model.tensor_parallel > emulated_devices) {
    r.fail(node["tensor_parallel"], tensor_parallel,
           fmt::format("is {}, which needs emulated devices 0..{}, but emulated_device.count is {}",
                       model.tensor_parallel, model.tensor_parallel - 1, emulated_devices));
  }
  for (std::size_t i = 0; i < model.devices.size(); ++i) {
    if (model.devices[i] < emulated_devices) continue;
    r.fail(node["devices"][i], fmt::format("{}.devices[{}]", base, i),
           fmt::format("is emulated device {}, but emulated_device.count is {}", model.devices[i],
                       emulated_devices));
  }
}

ModelConfig read_model(const Reader& r, const YAML::Node& node, const std::string& base,
                       int emulated_devices) {
  r.expect_keys(node, base,
                {"name",
                 "path",
                 "aliases",
                 "backend",
                 "devices",
                 "tensor_parallel",
                 "gpu_memory_utilization",
                 "cuda_graphs",
                 "threads",
                 "max_model_len",
                 "max_num_seqs",
                 "max_num_batched_tokens",
                 "max_waiting_sequences",
                 "max_waiting_requests",
                 "max_sequences_per_request",
                 "max_waiting_share_per_client",
                 "kv_cache_bytes",
                 "block_size",
                 "kv_cache_dtype",
                 "enable_prefix_caching",
                 "chat_template",
                 "tool_parser",
                 "reasoning_parser",
                 "structured_outputs_compile_timeout_ms",
                 "structured_outputs_max_concurrent_compiles",
                 "structured_outputs_max_mask_work",
                 "required",
                 "sampling"});
  ModelConfig model;
  for (const char* required_key : {"name", "path"}) {
    if (!node[required_key]) r.fail(node, join_path(base, required_key), "is required");
  }
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const std::string path = join_path(base, key);
    const YAML::Node& value = entry.second;
    auto positive = [&](int& field) {
      field = r.int32(value, path);
      if (field <= 0) r.fail(value, path, "must be > 0");
    };
    if (key == "name") {
      model.name = r.string(value, path);
      if (model.name.empty()) r.fail(value, path, "must not be empty");
    } else if (key == "path") {
      model.path = r.string(value, path);
      if (model.path.empty()) r.fail(value, path, "must not be empty");
    } else if (key == "aliases") {
      model.aliases = r.string_list(value, path);
    } else if (key == "backend") {
      model.backend = r.string(value, path);
      if (!engine::parse_backend_kind(model.backend)) {
        r.fail(value, path,
               fmt::format("must be cpu, cuda or cuda-emulated, got '{}'", model.backend));
      }
    } else if (key == "devices") {
      if (!value.IsSequence()) r.fail(value, path, "must be a list of device ordinals");
      for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string item = fmt::format("{}[{}]", path, i);
        const int device = r.int32(value[i], item);
        if (device < 0) r.fail(value[i], item, "must be >= 0");
        if (std::find(model.devices.begin(), model.devices.end(), device) != model.devices.end()) {
          r.fail(value[i], item, fmt::format("repeats device {}", device));
        }
        model.devices.push_back(device);
      }
    } else if (key == "tensor_parallel") {
      model.tensor_parallel = r.int32(value, path);
      if (model.tensor_parallel < 1) {
        r.fail(value, path, fmt::format("must be >= 1, got '{}'", model.tensor_parallel));
      }
    } else if (key == "gpu_memory_utilization") {
      const double share = r.number(value, path);
      if (!(share > 0 && share <= 1)) {
        r.fail(value, path, fmt::format("must be in (0, 1], got '{}'", r.scalar(value, path)));
      }
      model.gpu_memory_utilization = share;
    } else if (key == "cuda_graphs") {
      model.cuda_graphs = r.boolean(value, path);
    } else if (key == "threads") {
      model.threads = r.int32(value, path);
      if (model.threads < 0) r.fail(value, path, "must be >= 0 (0 means one per core)");
    } else if (key == "max_model_len") {
      positive(model.max_model_len);
    } else if (key == "max_num_seqs") {
      positive(model.max_num_seqs);
    } else if (key == "max_num_batched_tokens") {
      positive(model.max_num_batched_tokens);
    } else if (key == "max_waiting_sequences" || key == "max_waiting_requests") {
      // max_waiting_requests is the older name: the queue always counted sequences.
      positive(model.max_waiting_sequences);
    } else if (key == "max_sequences_per_request") {
      positive(model.max_sequences_per_request);
    } else if (key == "max_waiting_share_per_client") {
      model.max_waiting_share_per_client = r.number(value, path);
      if (!(model.max_waiting_share_per_client > 0 && model.max_waiting_share_per_client <= 1)) {
        r.fail(value, path, "must be in (0, 1]");
      }
    } else if (key == "kv_cache_bytes") {
      model.kv_cache_bytes = r.bytes(value, path);
      if (*model.kv_cache_bytes == 0) r.fail(value, path, "must be > 0");
    } else if (key == "block_size") {
      positive(model.block_size);
      if ((model.block_size & (model.block_size - 1)) != 0 || model.block_size > 256) {
        r.fail(value, path, "must be a power of two up to 256");
      }
    } else if (key == "kv_cache_dtype") {
      model.kv_cache_dtype = r.string(value, path);
      if (model.kv_cache_dtype != "f16" && model.kv_cache_dtype != "bf16" &&
          model.kv_cache_dtype != "f32") {
        r.fail(value, path, "must be f16, bf16 or f32");
      }
    } else if (key == "enable_prefix_caching") {
      model.enable_prefix_caching = r.boolean(value, path);
    } else if (key == "chat_template") {
      model.chat_template = r.string(value, path);
    } else if (key == "tool_parser") {
      model.tool_parser = r.string(value, path);
      if (!engine::chat::known_tool_parser(model.tool_parser)) {
        r.fail(value, path, "must be hermes, llama3_json, mistral, deepseek_v3 or none");
      }
    } else if (key == "reasoning_parser") {
      model.reasoning_parser = r.string(value, path);
      if (!engine::chat::known_reasoning_parser(model.reasoning_parser)) {
        r.fail(value, path, "must be qwen3, deepseek_r1 or none");
      }
    } else if (key == "structured_outputs_compile_timeout_ms") {
      positive(model.structured_outputs_compile_timeout_ms);
    } else if (key == "structured_outputs_max_concurrent_compiles") {
      positive(model.structured_outputs_max_concurrent_compiles);
    } else if (key == "structured_outputs_max_mask_work") {
      positive(model.structured_outputs_max_mask_work);
    } else if (key == "required") {
      model.required = r.boolean(value, path);
    } else if (key == "sampling") {
      read_sampling(r, value, path, model.sampling);
    }
  }
  check_model_backend(r, node, base, model, emulated_devices);
  return model;
}

Config read_config(const Reader& r, const YAML::Node& root) {
  Config config;
  if (!root.IsDefined() || root.IsNull()) r.fail(root, "config", "is empty");
  if (!root.IsMap()) r.fail(root, "config", "must be a mapping");
  r.expect_keys(root, "", {"server", "logging", "emulated_device", "models"});
  if (const YAML::Node server = root["server"]) read_server(r, server, config.server);
  if (const YAML::Node logging = root["logging"]) read_logging(r, logging, config.logging);
  if (const YAML::Node emulated = root["emulated_device"]) {
    read_emulated_device(r, emulated, config.emulated_device);
  }
  const int emulated_devices =
      config.emulated_device.count.value_or(engine::EmulatedDeviceOptions{}.devices);
  const YAML::Node models = root["models"];
  if (!models) r.fail(root, "models", "is required: list at least one model");
  if (!models.IsSequence() || models.size() == 0) {
    r.fail(models, "models", "must be a non-empty list of models");
  }
  std::set<std::string> names;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const std::string base = fmt::format("models[{}]", i);
    ModelConfig model = read_model(r, models[i], base, emulated_devices);
    if (!names.insert(model.name).second) {
      r.fail(models[i]["name"], base + ".name", fmt::format("repeats the name '{}'", model.name));
    }
    for (std::size_t a = 0; a < model.aliases.size(); ++a) {
      if (!names.insert(model.aliases[a]).second) {
        r.fail(models[i]["aliases"][a], fmt::format("{}.aliases[{}]", base, a),
               fmt::format("'{}' is already the name or alias of another model", model.aliases[a]));
      }
    }
    config.models.push_back(std::move(model));
  }
  return config;
}

}  // namespace

EnvironmentLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

Expected<Config> parse_config(std::string_view yaml_text, std::string_view source,
                              const EnvironmentLookup& environment) {
  std::map<std::string, int> lines;
  const Reader reader(source, environment, lines);
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_text));
    std::vector<YAML::Node> ancestors;
    reject_repeated_keys(reader, root, "", ancestors);
    Config config = read_config(reader, root);
    config.origin = {std::string(source), std::move(lines)};
    return config;
  } catch (const ConfigError& error) {
    return Error{error.message};
  } catch (const YAML::Exception& error) {
    const int line = error.mark.line >= 0 ? error.mark.line + 1 : 0;
    return Error{fmt::format("{}:{}: invalid YAML: {}", source, line, error.msg)};
  }
}

Expected<Config> load_config_file(const std::string& path, const EnvironmentLookup& environment) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Error{fmt::format("{}: cannot open config file", path)};
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return Error{fmt::format("{}: cannot read config file", path)};
  return parse_config(text.str(), path, environment);
}

std::string dump_config(const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "server" << YAML::Value << YAML::BeginMap;
  const ServerConfig& s = config.server;
  out << YAML::Key << "host" << YAML::Value << s.host;
  out << YAML::Key << "port" << YAML::Value << s.port;
  out << YAML::Key << "io_threads" << YAML::Value << s.io_threads;
  out << YAML::Key << "compute_nice" << YAML::Value << s.compute_nice;
  out << YAML::Key << "control_nice" << YAML::Value << s.control_nice;
  out << YAML::Key << "api_keys" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (std::size_t i = 0; i < s.api_keys.size(); ++i) out << "<redacted>";
  out << YAML::EndSeq;
  out << YAML::Key << "protect_operational_endpoints" << YAML::Value
      << s.protect_operational_endpoints;
  out << YAML::Key << "limits" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "max_body_bytes" << YAML::Value << s.limits.max_body_bytes;
  out << YAML::Key << "max_header_bytes" << YAML::Value << s.limits.max_header_bytes;
  out << YAML::Key << "max_connections" << YAML::Value << s.limits.max_connections;
  out << YAML::Key << "stream_buffer_bytes" << YAML::Value << s.limits.stream_buffer_bytes;
  out << YAML::EndMap;
  out << YAML::Key << "timeouts" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "header_s" << YAML::Value << s.timeouts.header_s;
  out << YAML::Key << "body_s" << YAML::Value << s.timeouts.body_s;
  out << YAML::Key << "idle_s" << YAML::Value << s.timeouts.idle_s;
  out << YAML::Key << "drain_s" << YAML::Value << s.timeouts.drain_s;
  out << YAML::Key << "slow_client_s" << YAML::Value << s.timeouts.slow_client_s;
  out << YAML::Key << "sse_keepalive_s" << YAML::Value << s.timeouts.sse_keepalive_s;
  out << YAML::EndMap;
  out << YAML::Key << "responses_store" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "max_responses" << YAML::Value << s.responses_store.max_responses;
  out << YAML::Key << "max_bytes" << YAML::Value << s.responses_store.max_bytes;
  out << YAML::Key << "max_share_per_key" << YAML::Value << s.responses_store.max_share_per_key;
  out << YAML::Key << "ttl_s" << YAML::Value << s.responses_store.ttl_s;
  out << YAML::EndMap << YAML::EndMap;

  out << YAML::Key << "logging" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "level" << YAML::Value << config.logging.level;
  out << YAML::Key << "format" << YAML::Value
      << (config.logging.format == LogFormat::json ? "json" : "text");
  out << YAML::EndMap;

  // The emulated machine and the CUDA settings with their defaults, where something reads them
  // or the config gave them.
  const bool any_emulated = std::ranges::any_of(
      config.models, [](const ModelConfig& m) { return m.backend == "cuda-emulated"; });
  const EmulatedDeviceConfig& emulated = config.emulated_device;
  if (any_emulated || emulated.count || emulated.memory_bytes) {
    const engine::EmulatedDeviceOptions defaults;
    out << YAML::Key << "emulated_device" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "count" << YAML::Value << emulated.count.value_or(defaults.devices);
    out << YAML::Key << "memory_bytes" << YAML::Value
        << emulated.memory_bytes.value_or(defaults.memory_bytes);
    out << YAML::EndMap;
  }

  out << YAML::Key << "models" << YAML::Value << YAML::BeginSeq;
  for (const ModelConfig& m : config.models) {
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << m.name;
    out << YAML::Key << "path" << YAML::Value << m.path;
    out << YAML::Key << "aliases" << YAML::Value << YAML::Flow << m.aliases;
    out << YAML::Key << "backend" << YAML::Value << m.backend;
    out << YAML::Key << "devices" << YAML::Value << YAML::Flow << m.devices;
    if (m.tensor_parallel > 0) {
      out << YAML::Key << "tensor_parallel" << YAML::Value << m.tensor_parallel;
    }
    const engine::CudaOptions cuda;
    if (m.backend != "cpu" || m.gpu_memory_utilization) {
      // Shortest text that reads back the same, so the default dumps as 0.9.
      out << YAML::Key << "gpu_memory_utilization" << YAML::Value
          << fmt::format("{}", m.gpu_memory_utilization.value_or(cuda.gpu_memory_utilization));
    }
    if (m.backend != "cpu" || m.cuda_graphs) {
      out << YAML::Key << "cuda_graphs" << YAML::Value << m.cuda_graphs.value_or(cuda.cuda_graphs);
    }
    out << YAML::Key << "threads" << YAML::Value << m.threads;
    if (m.max_model_len > 0) out << YAML::Key << "max_model_len" << YAML::Value << m.max_model_len;
    out << YAML::Key << "max_num_seqs" << YAML::Value << m.max_num_seqs;
    out << YAML::Key << "max_num_batched_tokens" << YAML::Value << m.max_num_batched_tokens;
    out << YAML::Key << "max_waiting_sequences" << YAML::Value << m.max_waiting_sequences;
    out << YAML::Key << "max_sequences_per_request" << YAML::Value << m.max_sequences_per_request;
    out << YAML::Key << "max_waiting_share_per_client" << YAML::Value
        << m.max_waiting_share_per_client;
    if (m.kv_cache_bytes) out << YAML::Key << "kv_cache_bytes" << YAML::Value << *m.kv_cache_bytes;
    out << YAML::Key << "block_size" << YAML::Value << m.block_size;
    out << YAML::Key << "kv_cache_dtype" << YAML::Value << m.kv_cache_dtype;
    out << YAML::Key << "enable_prefix_caching" << YAML::Value << m.enable_prefix_caching;
    out << YAML::Key << "chat_template" << YAML::Value << m.chat_template;
    if (!m.tool_parser.empty()) out << YAML::Key << "tool_parser" << YAML::Value << m.tool_parser;
    if (!m.reasoning_parser.empty()) {
      out << YAML::Key << "reasoning_parser" << YAML::Value << m.reasoning_parser;
    }
    out << YAML::Key << "structured_outputs_compile_timeout_ms" << YAML::Value
        << m.structured_outputs_compile_timeout_ms;
    out << YAML::Key << "structured_outputs_max_concurrent_compiles" << YAML::Value
        << m.structured_outputs_max_concurrent_compiles;
    out << YAML::Key << "structured_outputs_max_mask_work" << YAML::Value
        << m.structured_outputs_max_mask_work;
    out << YAML::Key << "required" << YAML::Value << m.required;
    out << YAML::Key << "sampling" << YAML::Value << YAML::BeginMap;
    const SamplingDefaults& d = m.sampling;
    auto optional = [&](const char* key, const auto& value) {
      if (value) out << YAML::Key << key << YAML::Value << *value;
    };
    optional("temperature", d.temperature);
    optional("top_p", d.top_p);
    optional("top_k", d.top_k);
    optional("min_p", d.min_p);
    optional("repetition_penalty", d.repetition_penalty);
    optional("presence_penalty", d.presence_penalty);
    optional("frequency_penalty", d.frequency_penalty);
    optional("max_tokens", d.max_tokens);
    optional("seed", d.seed);
    out << YAML::EndMap << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace tern::service
