#pragma once

// Internal to service/openai's parsers: the fields chat and text completions share.
#include <string_view>

#include "service/api/generation_request.h"
#include "service/api/json_reader.h"

namespace tern::service::openai {

// Reads `key` when it is a field of api::GenerationRequest: a sampling field, model, stream,
// stream_options, user, or a structured-output field. Returns false for any other key, and for a
// null value of a field other than sampling's, which the caller skips as "not given".
bool read_generation_field(std::string_view key, const api::json::element& value,
                           api::GenerationRequest& request, api::json::Check& error);

}  // namespace tern::service::openai
