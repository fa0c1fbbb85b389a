#pragma once

// Internal to service/openai's parsers: fields tern does not implement yet whose values would
// change what the output means. Ignoring them would answer a different question than the one
// asked (free text for a JSON schema, one sample for best-of-n), so each is a 400 naming the
// field until the capability lands; the values that ask for what tern does anyway pass.
#include <string>
#include <string_view>

#include "service/api/json_reader.h"

namespace tern::service::openai {

// Checks `key` (not null) against the unimplemented fields shared by chat and text completions:
// response_format other than text, best_of > 1, guided_*. Any other key passes.
api::json::Check refuse_unimplemented_field(std::string_view key, const api::json::element& value);

}  // namespace tern::service::openai
