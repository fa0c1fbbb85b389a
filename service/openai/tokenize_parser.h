#pragma once

#include <string_view>

#include "service/api/api_error.h"
#include "service/api/tokenize_request.h"

namespace tern::service::openai {

api::ApiResult<api::TokenizeRequest> parse_tokenize_request(std::string_view body);
api::ApiResult<api::DetokenizeRequest> parse_detokenize_request(std::string_view body);

}  // namespace tern::service::openai
