#include "service/openai/generation_fields.h"

#include "service/api/structured_output_fields.h"
#include "service/openai/sampling_fields.h"

namespace tern::service::openai {

bool read_generation_field(std::string_view key, const api::json::element& value,
                           api::GenerationRequest& request, api::json::Check& error) {
  if (read_sampling_field(key, value, request.sampling, error)) return true;
  if (value.is_null()) return false;
  if (key == "model") {
    error = api::json::read_string(value, key, request.model);
  } else if (key == "stream") {
    error = api::json::read_bool(value, key, request.stream);
  } else if (key == "stream_options") {
    error = read_stream_options(value, request.include_usage);
  } else if (key == "user") {
    error = api::json::read_string(value, key, request.user);
  } else {
    return api::read_structured_output_field(key, value, request.structured_output, error);
  }
  return true;
}

}  // namespace tern::service::openai
