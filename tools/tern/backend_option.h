#pragma once

#include "engine/backend/backend_spec.h"
#include "engine/expected.h"
#include "tools/tern/arguments.h"

namespace tern::tools {

inline constexpr OptionSpec kBackendOption{
    "backend", true, "cpu (default) or cuda; one this build or machine lacks is an error"};

// `--backend cpu|cuda` of generate and bench: the kind, or why it cannot run on this machine,
// decided before any weights are read. Both are usage errors (exit 2).
Expected<engine::BackendKind> backend_option(const Arguments& parsed);

}  // namespace tern::tools
