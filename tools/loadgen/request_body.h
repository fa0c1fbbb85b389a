#pragma once

// The JSON body of request `index`: the same prompt and settings in every mode.
#include <string>

#include "tools/loadgen/options.h"

namespace tern::loadgen {

std::string request_body(const Options& options, const std::string& model, int index);

}  // namespace tern::loadgen
