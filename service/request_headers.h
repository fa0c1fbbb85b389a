#pragma once

// Checks on request headers that the server applies before it routes or logs a request.
#include <string>
#include <string_view>

namespace tern::service {

// Carries a request's id both ways: the client may send one, and every response names the id
// its access-log line carries.
inline constexpr std::string_view kRequestIdHeader = "X-Request-Id";

// A client's X-Request-Id is kept when it is 1 to 128 characters of letters, digits and
// "-_.:"; anything else (spaces, quotes) could forge fields in the access log.
bool usable_request_id(std::string_view id);

// A fresh id: 32 hex digits, 128 bits from the cryptographic generator (random_id.h).
std::string new_request_id();

// True for application/json, any case, with or without parameters (charset=utf-8).
bool is_json_content_type(std::string_view content_type);

}  // namespace tern::service
