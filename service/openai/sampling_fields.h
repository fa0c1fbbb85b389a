#pragma once

// Internal to service/openai's parsers: the fields that chat and text completions share.
#include <string_view>

#include "service/api/json_reader.h"
#include "service/api/sampling_request.h"

namespace tern::service::openai {

// Reads `key` when it is a sampling field. Returns false for any other key, leaving `error`
// untouched; on a bad value sets `error`.
bool read_sampling_field(std::string_view key, const api::json::element& value,
                         api::SamplingRequest& sampling, api::json::Check& error);

// Cross-field rules, checked after every field is read.
api::json::Check validate_sampling(const api::SamplingRequest& sampling);

// stream_options.include_usage
api::json::Check read_stream_options(const api::json::element& value, bool& include_usage);

}  // namespace tern::service::openai
