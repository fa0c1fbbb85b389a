#pragma once

// Errors on /v1/messages* in Anthropic's shape, so the Anthropic SDKs raise the right error
// class: {"type":"error","error":{"type","message"}}, the type chosen by HTTP status.
#include <string>
#include <string_view>

#include "service/api/api_error.h"

namespace tern::service::anthropic {

// invalid_request_error, authentication_error, permission_error, not_found_error,
// api::request_too_large, rate_limit_error, overloaded_error (503: the server's overload status,
// which load balancers understand, where Anthropic's API uses 529) or api_error.
std::string_view error_type(int status);

// The whole body. The message starts with the offending field, when there is one, since
// Anthropic's shape has no `param`.
std::string error_body(const api::ApiError& error);

}  // namespace tern::service::anthropic
