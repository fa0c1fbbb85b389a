#include <array>
#include <filesystem>
#include <optional>
#include <string_view>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/backend/backend_factory.h"
#include "engine/model/demo_model.h"
#include "engine/registry.h"
#include "service/config.h"
#include "service/config_warnings.h"
#include "service/engine_model_service.h"
#include "service/host_address.h"
#include "service/logging.h"
#include "service/model_spec.h"
#include "service/server.h"
#include "service/service_metrics.h"
#include "tools/tern/arguments.h"
#include "tools/tern/backend_option.h"
#include "tools/tern/subcommands.h"

namespace tern::tools {
namespace {

constexpr std::array<OptionSpec, 14> kOptions{{
    {"config", true, "YAML file that lists the server settings and the models to serve", 'c'},
    {"model", true,
     "serve one model: a .gguf file or a Hugging Face directory; 'demo' serves the random demo "
     "model (models/demo.gguf, written on first use); random:SHAPE:TYPE[:SEED] a random-weight "
     "model made in memory (a benchmark aid, e.g. random:llama-3-8b:q4_0)",
     'm'},
    {"name", true, "with --model: the name clients send as `model` (default: the file's name)"},
    {"backend", true,
     "with --model: cpu (default), cuda, or cuda-emulated (the CUDA path on the SIMT emulator, a "
     "slow test mode); one the build or machine lacks is an error"},
    kDevicesOption,
    kTensorParallelOption,
    kGpuMemoryUtilizationOption,
    kNoCudaGraphsOption,
    kEmulatedDevicesOption,
    kEmulatedDeviceMemoryOption,
    {"host", true,
     "listen address, an IP address or a host name (overrides the config; default 0.0.0.0)"},
    {"port", true, "listen port (overrides the config; default 8000; 0 picks a free one)", 'p'},
    {"check", false, "validate the config, print the effective config and exit"},
    {"help", false, "print this help", 'h'},
}};

constexpr std::string_view kUsage =
    "usage: tern serve --config FILE [--host H] [--port P] [--check]\n"
    "       tern serve --model PATH [--name N] [--backend cpu|cuda|cuda-emulated] [--devices 0,1]\n"
    "                  [--tensor-parallel N] [--gpu-memory-utilization F] [--no-cuda-graphs]\n"
    "                  [--host H] [--port P] [--check]\n";

constexpr std::string_view kDemoPath = "models/demo.gguf";

int usage_error(std::string_view message) {
  fmt::print(stderr, "tern serve: {}\n{}", message, kUsage);
  return kExitUsage;
}

// The model's name when --name is absent: the file's name without .gguf, or the directory's.
std::string default_name(const std::string& path) {
  std::filesystem::path model(path);
  if (!model.has_filename()) model = model.parent_path();
  return model.extension() == ".gguf" ? model.stem().string() : model.filename().string();
}

// --model PATH as a one-model config. The model is required: a single-model server that
// cannot load it has nothing to serve. The demo model is written later, once serving is sure.
Expected<service::Config> one_model_config(const Arguments& parsed, bool& demo) {
  service::Config config;
  service::ModelConfig model;
  model.path = *parsed.value("model");
  demo = model.path == "demo";
  if (demo) model.path = std::string(kDemoPath);
  model.name = parsed.value("name").value_or(demo ? "demo" : default_name(model.path));
  if (model.name.empty()) return Error{"--name must not be empty"};
  // Only what the flags give is set, so --check warns about a flag the backend ignores and the
  // rest take the defaults, as in a config file.
  auto backend = parse_backend_options(parsed);
  if (!backend) return backend.error();
  model.backend = std::string(engine::to_string(backend->kind));
  model.devices = backend->devices;
  model.tensor_parallel = backend->tensor_parallel;
  if (parsed.has("gpu-memory-utilization")) {
    model.gpu_memory_utilization = backend->cuda.gpu_memory_utilization;
  }
  if (parsed.has("no-cuda-graphs")) model.cuda_graphs = false;
  if (parsed.has("emulated-devices")) config.emulated_device.count = backend->emulated.devices;
  if (parsed.has("emulated-device-memory")) {
    config.emulated_device.memory_bytes = backend->emulated.memory_bytes;
  }
  model.required = true;
  config.models.push_back(std::move(model));
  return config;
}

}  // namespace

int command_serve(std::span<char* const> args) {
  int exit_code = 0;
  const auto parsed = parse_command_line("serve", args, kOptions, kUsage, exit_code);
  if (!parsed) return exit_code;
  if (parsed->has("config") == parsed->has("model")) {
    return usage_error("give exactly one of --config FILE and --model PATH");
  }
  if (parsed->has("name") && !parsed->has("model")) return usage_error("--name needs --model");
  for (const std::string_view option : kBackendOptionNames) {
    if (parsed->has(option) && !parsed->has("model")) {
      return usage_error(
          fmt::format("--{} needs --model (a config names each model's backend)", option));
    }
  }
  const auto host = parsed->value("host");
  if (host) {
    if (const auto address = service::resolve_host(*host); !address) {
      return usage_error("--host " + address.error().message);
    }
  }
  const auto port = parsed->integer("port", 0);
  if (!port || *port < 0 || *port > 65535) return usage_error("--port must be in 0..65535");
  bool demo = false;
  auto config = parsed->has("config") ? service::load_config_file(*parsed->value("config"))
                                      : one_model_config(*parsed, demo);
  if (!config) {
    fmt::print(stderr, "{}\n", config.error().message);
    return kExitUsage;
  }
  if (parsed->has("model") && !parsed->has("check")) {  // --check warns about the keys instead
    const auto kind = engine::parse_backend_kind(config->models.front().backend);
    for (const std::string& warning : ignored_backend_options(*parsed, *kind)) {
      fmt::print(stderr, "tern serve: warning: {}\n", warning);
    }
  }
  if (host) config->server.host = *host;
  if (parsed->has("port")) config->server.port = static_cast<int>(*port);
  if (parsed->has("check")) {
    service::MachineFacts machine = service::this_machine();
    if (demo) {  // serving writes it, so its absence is no problem
      machine.path_exists = [exists = std::move(machine.path_exists)](const std::string& path) {
        return path == kDemoPath || exists(path);
      };
    }
    for (const std::string& warning : service::machine_warnings(*config, machine)) {
      fmt::print(stderr, "{}\n", warning);
    }
    fmt::print("{}", service::dump_config(*config));
    return 0;
  }
  if (Status logging = service::configure_logging(config->logging); !logging.ok()) {
    fmt::print(stderr, "tern serve: {}\n", logging.message());
    return kExitUsage;
  }
  std::vector<engine::ModelSpec> specs;
  for (const service::ModelConfig& model : config->models) {
    specs.push_back(service::to_model_spec(model, config->emulated_device));
  }
  // A backend this build or machine cannot run stops the server here, before it listens; the
  // model is never served on the CPU instead.
  for (const engine::ModelSpec& spec : specs) {
    const Status available = engine::check_backend_available(engine::backend_spec_of(spec));
    if (!available.ok()) {
      fmt::print(stderr, "tern serve: model '{}' ({}): {}\n", spec.name, spec.path,
                 available.message());
      return kExitUsage;
    }
  }
  if (demo && !std::filesystem::exists(kDemoPath)) {
    spdlog::info("writing the demo model to {}", kDemoPath);
    if (Status written = engine::write_demo_model(std::string(kDemoPath)); !written) {
      fmt::print(stderr, "tern serve: {}\n", written.message());
      return kExitUsage;
    }
  }

  if (demo) {
    specs.front().note = std::string(engine::kDemoModelNote);
    spdlog::warn("serving the demo model: its weights are random, so its text is random");
  }

  // The server answers /health at once and /ready with 503 until the models have loaded.
  engine::ModelRegistry registry(std::move(specs),
                                 {.threads = 0, .compute_nice = config->server.compute_nice});
  service::EngineModelService models(registry);
  service::ServiceMetrics metrics;
  service::Server server(config->server, models, metrics);
  if (Status started = server.start(); !started.ok()) {
    fmt::print(stderr, "tern serve: {}\n", started.message());
    return kExitFailure;
  }
  std::optional<Status> load_result;
  std::thread loading([&] {
    Status loaded = registry.wait_until_loaded();
    if (loaded.ok()) {
      spdlog::info("ready: {} of {} models loaded, {} compute threads", registry.loaded().size(),
                   registry.specs().size(), registry.compute_threads());
    } else if (!registry.ready()) {
      bool required_failed = false;
      for (const engine::ModelSpec& spec : registry.specs()) {
        required_failed = required_failed || (spec.required && !registry.find(spec.name));
      }
      if (required_failed) {
        load_result = std::move(loaded);
        server.stop();
        return;
      }
      spdlog::error("{}; the server stays up but is not ready", loaded.message());
    }
  });
  server.run();
  loading.join();
  registry.stop(engine::Engine::StopMode::cancel);
  if (load_result) {
    // A required model that does not load is bad input, as it is for `tern generate`.
    fmt::print(stderr, "tern serve: {}\n", load_result->message());
    return kExitUsage;
  }
  if (server.drain_timed_out()) {
    spdlog::warn("stopped with the drain incomplete (exit code {})", kExitDrainIncomplete);
    return kExitDrainIncomplete;
  }
  spdlog::info("stopped");
  return 0;
}

TERN_SUBCOMMAND("serve", "serve models over the OpenAI-compatible HTTP API", command_serve);

}  // namespace tern::tools
