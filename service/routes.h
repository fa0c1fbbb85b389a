#pragma once

#include <string>
#include <string_view>

#include "service/openai/api_error.h"

namespace tern::service {

enum class Endpoint {
  health,
  ready,
  metrics,
  models,
  model,  // /v1/models/{id}
  chat_completions,
  completions,
  tokenize,
  detokenize,
  messages,               // Anthropic's /v1/messages
  messages_count_tokens,  // Anthropic's /v1/messages/count_tokens
  responses,              // POST /v1/responses
  response,               // GET /v1/responses/{id}
  response_delete,        // DELETE /v1/responses/{id}
};

struct RouteMatch {
  Endpoint endpoint;
  std::string path_parameter;  // the {id} of /v1/models/{id} or /v1/responses/{id}, decoded
  // /health, /ready and /metrics: open unless the config protects them.
  bool operational = false;
};

// The endpoint table: method + path (the query string is ignored) to an endpoint, else 404
// for an unknown path or 405 for a known path with another method, both in OpenAI's shape.
// HEAD matches every GET route.
openai::ApiResult<RouteMatch> match_route(std::string_view method, std::string_view target);

// The endpoint's path as the `endpoint` metric label; a bounded set, whatever clients send.
std::string_view endpoint_label(Endpoint endpoint);

}  // namespace tern::service
