#include "engine/backend/backend_spec.h"

#include <string>

namespace tern::engine {

Expected<BackendKind> parse_backend_kind(std::string_view name) {
  if (name == "cpu") return BackendKind::cpu;
  if (name == "cuda") return BackendKind::cuda;
  return Error{"backend must be cpu or cuda, got '" + std::string(name) + "'",
               ErrorKind::invalid_field, "backend"};
}

std::string_view to_string(BackendKind kind) {
  return kind == BackendKind::cuda ? "cuda" : "cpu";
}

}  // namespace tern::engine
