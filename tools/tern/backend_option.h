#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/backend_spec.h"
#include "engine/expected.h"
#include "tools/tern/arguments.h"

namespace tern::tools {

// The backend options of generate, bench and serve --model; a config file says the same in its
// `backend`, `devices`, `tensor_parallel`, `gpu_memory_utilization`, `cuda_graphs` and
// `emulated_device` keys.
inline constexpr OptionSpec kBackendOption{
    "backend", true,
    "cpu (default), cuda, or cuda-emulated (the CUDA path on the SIMT emulator, a slow test "
    "mode); one this build or machine lacks is an error"};
inline constexpr OptionSpec kDevicesOption{
    "devices", true, "with cuda or cuda-emulated: device ordinals, comma-separated (default 0)"};
inline constexpr OptionSpec kTensorParallelOption{
    "tensor-parallel", true,
    "with cuda or cuda-emulated: split the model over N devices, one tensor-parallel rank each: "
    "--devices when given (N must match its count), else devices 0..N-1 (default 1)"};
inline constexpr OptionSpec kGpuMemoryUtilizationOption{
    "gpu-memory-utilization", true,
    "with cuda or cuda-emulated: share of each device's memory to use, in (0, 1] (default 0.9)"};
inline constexpr OptionSpec kNoCudaGraphsOption{
    "no-cuda-graphs", false, "with cuda or cuda-emulated: run decode steps without CUDA graphs"};
inline constexpr OptionSpec kEmulatedDevicesOption{
    "emulated-devices", true,
    "with cuda-emulated: devices of the emulated machine, 1..16 (default 1)"};
inline constexpr OptionSpec kEmulatedDeviceMemoryOption{
    "emulated-device-memory", true,
    "with cuda-emulated: memory of each emulated device, e.g. 512MiB (default 4GiB)"};

inline constexpr std::array<std::string_view, 7> kBackendOptionNames{
    kBackendOption.name,
    kDevicesOption.name,
    kTensorParallelOption.name,
    kGpuMemoryUtilizationOption.name,
    kNoCudaGraphsOption.name,
    kEmulatedDevicesOption.name,
    kEmulatedDeviceMemoryOption.name};

// The backend options as a spec (default sizes), each checked for range, and --devices and
// --tensor-parallel against the backend, each other and --emulated-devices (the rules of
// engine::tensor_parallel_devices), without asking the machine. An error names the option
// and its value; it is a usage error (exit 2).
Expected<engine::BackendSpec> parse_backend_options(const Arguments& parsed);

// One line per backend option given that `kind` does not read, such as
// "--no-cuda-graphs has no effect with --backend cpu". They are warnings, not errors.
std::vector<std::string> ignored_backend_options(const Arguments& parsed, engine::BackendKind kind);

// generate and bench: parse_backend_options, the warnings printed to stderr as
// "tern COMMAND: warning: ...", then why the spec cannot run here, if it cannot; all decided
// before any weights are read.
Expected<engine::BackendSpec> backend_option(const Arguments& parsed, std::string_view command);

}  // namespace tern::tools
