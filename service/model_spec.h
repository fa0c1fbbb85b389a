#pragma once

#include "engine/served_model.h"
#include "service/config.h"

namespace tern::service {

// The engine's view of one configured model (the engine knows nothing of YAML).
engine::ModelSpec to_model_spec(const ModelConfig& config);

}  // namespace tern::service
