#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/expected.h"

namespace tern::engine {

// cuda_emulated is the whole CUDA path on the SIMT emulator (kernels/simt), on the CPU: a test
// mode, thousands of times slower than a GPU, that needs no GPU or driver.
enum class BackendKind { cpu, cuda, cuda_emulated };

// "cpu", "cuda" or "cuda-emulated"; anything else is an error that lists them.
Expected<BackendKind> parse_backend_kind(std::string_view name);
std::string_view to_string(BackendKind kind);

// Whether `kind` runs the CUDA path, so every rule for cuda (devices, CudaOptions, KV types)
// applies to it.
constexpr bool is_cuda(BackendKind kind) {
  return kind != BackendKind::cpu;
}

// What the config's gpu_memory_utilization and cuda_graphs keys (and their flags) say; read by
// cuda and cuda-emulated, ignored by cpu.
struct CudaOptions {
  double gpu_memory_utilization = 0.9;  // in (0, 1]: the share of each device's memory to take
  bool cuda_graphs = true;              // replay decode steps as captured CUDA graphs
  // Sample from the device's top candidates where they decide (not a config key: off only to
  // compare against whole rows in tests).
  bool sample_on_device = true;
};

inline constexpr int kMaxEmulatedDevices = 16;

// The machine cuda-emulated runs on: how many devices the emulator presents, and the global
// memory of each. Only cuda-emulated reads it.
struct EmulatedDeviceOptions {
  int devices = 1;  // 1..kMaxEmulatedDevices
  std::uint64_t memory_bytes = 4ull << 30;
};

// What one forward pass must hold. A backend sizes its activation buffers from these once, so
// a forward pass allocates nothing; Engine::create refuses a scheduler that would ask for more.
struct BackendOptions {
  std::int32_t max_sequences = 64;      // sequences per forward pass at most
  std::int32_t max_batch_tokens = 512;  // tokens per forward pass at most
  std::int32_t max_context = 0;         // longest sequence; 0 means the model's context length
};

// Which backend runs a model, on which devices, for how large a batch: what the config's
// `backend`, `devices`, `tensor_parallel`, CUDA and `emulated_device` keys and the CLI's flags
// for them say, plus
// the sizes the caller's scheduler needs. create_backend (backend_factory.h) builds it.
struct BackendSpec {
  BackendKind kind = BackendKind::cpu;
  // CUDA device ordinals, only with cuda or cuda-emulated (the emulated machine's devices);
  // empty means device 0, or 0..tensor_parallel-1.
  std::vector<int> devices;
  // How many devices the model is split over, one tensor-parallel rank each (issue 16); 0 is
  // unset: as many as `devices` lists, else 1. tensor_parallel_devices reconciles the two.
  int tensor_parallel = 0;
  CudaOptions cuda;
  EmulatedDeviceOptions emulated;
  BackendOptions options;
};

// The devices the model runs on, one tensor-parallel rank each, in rank order: `devices` when
// given, else 0..tensor_parallel-1, else {0}. An error where the two disagree
// ("tensor_parallel is 2 but devices lists 3 devices ([0, 1, 2])"), where tensor_parallel is
// below 1 once set, or where a cpu backend is asked for more than one rank.
Expected<std::vector<int>> tensor_parallel_devices(const BackendSpec& spec);

}  // namespace tern::engine
