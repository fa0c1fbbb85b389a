#pragma once

#include <string_view>

#include "engine/expected.h"
#include "service/api/api_error.h"

namespace tern::service {

// The client-facing error for an engine's error, chosen by its kind, never by its text:
// invalid_field and context_length are 400s naming the field (a request's "prompt" is called
// `prompt_param` there), overloaded a 429 with Retry-After, not_found a 404, unavailable a 503,
// internal a 500.
api::ApiError api_error_from(const Error& error, std::string_view model_name,
                             std::string_view prompt_param);

}  // namespace tern::service
