#pragma once

// The endpoint table: every endpoint is one row of routes.cpp, with everything the server knows
// of it; its handler is an object of service/endpoint_handlers.h. Adding an endpoint is one row
// and one handler.
#include <span>
#include <string>
#include <string_view>

#include "service/api/api_error.h"

namespace tern::service {

namespace detail {
struct EndpointHandler;  // http_session.cpp: a reply, or an answer that streams
}

// The error body's shape that an endpoint's clients read.
enum class ErrorShape { openai, anthropic };

struct Route {
  std::string_view method;  // HEAD matches every GET route
  std::string_view path;    // a trailing '*' matches a non-empty rest: the path parameter
  std::string_view label;   // the `endpoint` metric label: a bounded set, whatever clients send
  const detail::EndpointHandler* handler;
  bool on_streams;  // answered on the streams loop (generation and tokenizer work)
  ErrorShape errors;
  // /health, /ready and /metrics: open unless the config protects them, logged at debug level
  // when they succeed.
  bool operational;
  bool probe;  // /health and /ready: answered even past max_connections
};

std::span<const Route> routes();

struct RouteMatch {
  const Route* route = nullptr;
  std::string path_parameter;  // the {id} of /v1/models/{id} or /v1/responses/{id}, decoded
};

// Method + path (the query string is ignored) to its row, else 404 for an unknown path or 405
// for a known path with another method, both in OpenAI's shape.
api::ApiResult<RouteMatch> match_route(std::string_view method, std::string_view target);

// The error shape for a request that matched no row: that of the endpoints under whose path it
// falls (a wrong method or path under /v1/messages answers in Anthropic's shape).
ErrorShape error_shape_of_unrouted(std::string_view target);

}  // namespace tern::service
