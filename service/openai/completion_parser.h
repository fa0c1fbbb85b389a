#pragma once

#include <string_view>

#include "service/api/api_error.h"
#include "service/api/completion_request.h"

namespace tern::service::openai {

api::ApiResult<api::CompletionRequest> parse_completion_request(std::string_view body);

}  // namespace tern::service::openai
