#pragma once

#include "engine/served_model.h"
#include "service/config.h"

namespace tern::service {

// The engine's view of one configured model (the engine knows nothing of YAML), on the
// config's emulated machine (read by a cuda-emulated model only). Unset settings take the
// engine's defaults.
engine::ModelSpec to_model_spec(const ModelConfig& config,
                                const EmulatedDeviceConfig& emulated_device);

}  // namespace tern::service
