#pragma once

#include <optional>
#include <string>

#include "engine/expected.h"
#include "service/config.h"

namespace tern::service {

// Installs the process-wide spdlog logger on stderr. TERN_LOG_LEVEL and TERN_LOG_FORMAT
// (text | json) override the config, so an operator can raise verbosity without editing it.
Status configure_logging(const LoggingConfig& config,
                         const EnvironmentLookup& environment = process_environment());

}  // namespace tern::service
