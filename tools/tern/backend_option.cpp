#include "tools/tern/backend_option.h"

#include "engine/backend/backend_factory.h"

namespace tern::tools {

Expected<engine::BackendKind> backend_option(const Arguments& parsed) {
  auto kind = engine::parse_backend_kind(parsed.value("backend").value_or("cpu"));
  if (!kind) return Error{"--" + kind.error().message};
  if (Status available = engine::check_backend_available({.kind = *kind}); !available.ok()) {
    return available.error();
  }
  return kind;
}

}  // namespace tern::tools
