#include "service/config_warnings.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "engine/backend/backend_factory.h"
#include "engine/backend/device.h"
#include "engine/backend/tensor_parallel_shape.h"
#include "engine/model/model_weights.h"
#include "engine/model/random_model_spec.h"

namespace tern::service {
namespace {

std::string warning(const ConfigOrigin& origin, const std::string& key, std::string_view reason) {
  std::string where = origin.file;
  if (const auto line = origin.lines.find(key); !where.empty() && line != origin.lines.end()) {
    where += fmt::format(":{}", line->second);
  }
  return fmt::format("{}{}warning: {} {}", where, where.empty() ? "" : ": ", key, reason);
}

}  // namespace

MachineFacts this_machine() {
  MachineFacts facts;
  facts.path_exists = [](const std::string& path) {
    if (engine::is_random_model_spec(path)) return true;  // made in memory, not read
    std::error_code error;
    return std::filesystem::exists(path, error);
  };
  const engine::DeviceReport report = engine::discover_devices();
  for (const engine::DeviceInfo& device : report.devices) {
    if (device.kind == engine::DeviceKind::cuda) ++facts.cuda_devices;
  }
  facts.cuda_status = report.cuda_status;
  facts.tensor_parallel_problem = [](const std::string& path, int ranks) -> std::string {
    auto weights = engine::load_model(path);  // mapped, not read: the header is what counts
    if (!weights) return {};
    auto shape = engine::rank_shape(*weights, engine::RankSlice{0, ranks});
    return shape ? std::string() : shape.error().message;
  };
  return facts;
}

std::vector<std::string> machine_warnings(const Config& config, const MachineFacts& machine) {
  std::vector<std::string> warnings;
  const ConfigOrigin& origin = config.origin;
  const bool any_emulated = std::ranges::any_of(
      config.models, [](const ModelConfig& model) { return model.backend == "cuda-emulated"; });
  const EmulatedDeviceConfig& emulated = config.emulated_device;
  for (const auto& [key, given] : {std::pair{"count", emulated.count.has_value()},
                                   std::pair{"memory_bytes", emulated.memory_bytes.has_value()}}) {
    if (given && !any_emulated) {
      warnings.push_back(warning(origin, fmt::format("emulated_device.{}", key),
                                 "has no effect: no model has backend cuda-emulated"));
    }
  }
  for (std::size_t i = 0; i < config.models.size(); ++i) {
    const ModelConfig& model = config.models[i];
    const std::string base = fmt::format("models[{}]", i);
    const int ranks =
        model.devices.size() > 1 ? static_cast<int>(model.devices.size()) : model.tensor_parallel;
    if (!machine.path_exists(model.path)) {
      warnings.push_back(warning(origin, base + ".path",
                                 fmt::format("'{}' does not exist on this machine", model.path)));
    } else if (ranks > 1 && machine.tensor_parallel_problem) {
      // Checked against the model itself where it is here: a split it does not allow.
      if (const std::string problem = machine.tensor_parallel_problem(model.path, ranks);
          !problem.empty()) {
        warnings.push_back(
            warning(origin, base + (model.devices.size() > 1 ? ".devices" : ".tensor_parallel"),
                    fmt::format("splits the model over {} ranks, which it does not allow: {}",
                                ranks, problem)));
      }
    }
    if (!model.chat_template.empty() && !machine.path_exists(model.chat_template)) {
      warnings.push_back(
          warning(origin, base + ".chat_template",
                  fmt::format("'{}' does not exist on this machine", model.chat_template)));
    }
    if (model.backend == "cpu") {
      for (const auto& [key, given] :
           {std::pair{"gpu_memory_utilization", model.gpu_memory_utilization.has_value()},
            std::pair{"cuda_graphs", model.cuda_graphs.has_value()}}) {
        if (given) {
          warnings.push_back(
              warning(origin, fmt::format("{}.{}", base, key), "has no effect with backend cpu"));
        }
      }
      continue;
    }
    // What engine::check_backend_available refuses, in its order: no usable device, then a
    // device the machine lacks (a real GPU only: cuda-emulated's devices are the config's).
    // `tensor_parallel: N` alone names devices 0..N-1.
    const bool ranks_without_devices = model.devices.empty() && model.tensor_parallel > 1;
    const std::string tensor_parallel = base + ".tensor_parallel";
    if (model.backend == "cuda") {
      if (machine.cuda_devices == 0) {
        const std::string why =
            machine.cuda_status.empty() ? "" : " (cuda: " + machine.cuda_status + ")";
        warnings.push_back(warning(origin, base + ".backend",
                                   "is cuda, but this machine has no usable CUDA device" + why));
        continue;
      }
      for (std::size_t d = 0; d < model.devices.size(); ++d) {
        if (model.devices[d] < machine.cuda_devices) continue;
        warnings.push_back(
            warning(origin, fmt::format("{}.devices[{}]", base, d),
                    fmt::format("is CUDA device {}, but this machine has {} CUDA device{}",
                                model.devices[d], machine.cuda_devices,
                                machine.cuda_devices == 1 ? "" : "s")));
      }
      if (ranks_without_devices && model.tensor_parallel > machine.cuda_devices) {
        warnings.push_back(warning(
            origin, tensor_parallel,
            fmt::format("is {}, which needs CUDA devices 0..{}, but this machine has {} CUDA "
                        "device{}",
                        model.tensor_parallel, model.tensor_parallel - 1, machine.cuda_devices,
                        machine.cuda_devices == 1 ? "" : "s")));
      }
    }
  }
  return warnings;
}

}  // namespace tern::service
