#pragma once

// Internal to service/openai's parsers: the fields that chat and text completions share.
#include <string_view>

#include "service/openai/json_reader.h"
#include "service/openai/sampling_request.h"

namespace tern::service::openai {

// Reads `key` when it is a sampling field. Returns false for any other key, leaving `error`
// untouched; on a bad value sets `error`.
bool read_sampling_field(std::string_view key, const json::element& value,
                         SamplingRequest& sampling, json::Check& error);

// Cross-field rules, checked after every field is read.
json::Check validate_sampling(const SamplingRequest& sampling);

// stream_options.include_usage
json::Check read_stream_options(const json::element& value, bool& include_usage);

}  // namespace tern::service::openai
