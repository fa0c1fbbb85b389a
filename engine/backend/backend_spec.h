#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/expected.h"

namespace tern::engine {

enum class BackendKind { cpu, cuda };

// "cpu" or "cuda"; anything else is an error that lists both.
Expected<BackendKind> parse_backend_kind(std::string_view name);
std::string_view to_string(BackendKind kind);

// What one forward pass must hold. A backend sizes its activation buffers from these once, so
// a forward pass allocates nothing; Engine::create refuses a scheduler that would ask for more.
struct BackendOptions {
  std::int32_t max_sequences = 64;      // sequences per forward pass at most
  std::int32_t max_batch_tokens = 512;  // tokens per forward pass at most
  std::int32_t max_context = 0;         // longest sequence; 0 means the model's context length
};

// Which backend runs a model, on which devices, for how large a batch: what the config's
// `backend` and `devices` keys and the CLI's `--backend` say, plus the sizes the caller's
// scheduler needs. create_backend (backend_factory.h) builds it.
struct BackendSpec {
  BackendKind kind = BackendKind::cpu;
  std::vector<int> devices;  // CUDA device ordinals, only with cuda; empty means device 0
  BackendOptions options;
};

}  // namespace tern::engine
