#include "engine/backend/backend_spec.h"

#include <string>

namespace tern::engine {

Expected<BackendKind> parse_backend_kind(std::string_view name) {
  if (name == "cpu") return BackendKind::cpu;
  if (name == "cuda") return BackendKind::cuda;
  if (name == "cuda-emulated") return BackendKind::cuda_emulated;
  return Error{"backend must be cpu, cuda or cuda-emulated, got '" + std::string(name) + "'",
               ErrorKind::invalid_field, "backend"};
}

std::string_view to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::cpu:
      return "cpu";
    case BackendKind::cuda:
      return "cuda";
    case BackendKind::cuda_emulated:
      return "cuda-emulated";
  }
  return "cpu";
}

}  // namespace tern::engine
