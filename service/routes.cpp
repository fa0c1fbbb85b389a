#include "service/routes.h"

#include <array>
#include <optional>

namespace tern::service {
namespace {

struct Route {
  std::string_view method;
  std::string_view path;  // a trailing '*' matches a non-empty rest: the path parameter
  Endpoint endpoint;
  bool operational;
};

constexpr std::array<Route, 14> kRoutes{{
    {"GET", "/health", Endpoint::health, true},
    {"GET", "/ready", Endpoint::ready, true},
    {"GET", "/metrics", Endpoint::metrics, true},
    {"GET", "/v1/models", Endpoint::models, false},
    {"GET", "/v1/models/*", Endpoint::model, false},
    {"POST", "/v1/chat/completions", Endpoint::chat_completions, false},
    {"POST", "/v1/completions", Endpoint::completions, false},
    {"POST", "/tokenize", Endpoint::tokenize, false},
    {"POST", "/detokenize", Endpoint::detokenize, false},
    {"POST", "/v1/messages", Endpoint::messages, false},
    {"POST", "/v1/messages/count_tokens", Endpoint::messages_count_tokens, false},
    {"POST", "/v1/responses", Endpoint::responses, false},
    {"GET", "/v1/responses/*", Endpoint::response, false},
    {"DELETE", "/v1/responses/*", Endpoint::response_delete, false},
}};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int high = hex_value(text[i + 1]);
      const int low = hex_value(text[i + 2]);
      if (high >= 0 && low >= 0) {
        out += static_cast<char>(high * 16 + low);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

// The path parameter when `path` matches `pattern`.
std::optional<std::string_view> match_path(std::string_view pattern, std::string_view path) {
  if (!pattern.ends_with('*')) {
    if (pattern == path) return std::string_view();
    return std::nullopt;
  }
  const std::string_view prefix = pattern.substr(0, pattern.size() - 1);
  if (path.size() <= prefix.size() || !path.starts_with(prefix)) return std::nullopt;
  return path.substr(prefix.size());
}

}  // namespace

openai::ApiResult<RouteMatch> match_route(std::string_view method, std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  // A trailing slash is a common slip; /v1/models/ means /v1/models.
  if (path.size() > 1 && path.ends_with('/')) path.remove_suffix(1);
  // HEAD is GET without the body (RFC 9110): the server drops the body when it answers.
  const std::string_view as_method = method == "HEAD" ? std::string_view("GET") : method;
  bool path_known = false;
  for (const Route& route : kRoutes) {
    const auto parameter = match_path(route.path, path);
    if (!parameter) continue;
    if (route.method != as_method) {
      path_known = true;
      continue;
    }
    return RouteMatch{route.endpoint, percent_decode(*parameter), route.operational};
  }
  if (path_known) return openai::method_not_allowed(method, path);
  return openai::route_not_found(method, path);
}

std::string_view endpoint_label(Endpoint endpoint) {
  for (const Route& route : kRoutes) {
    if (route.endpoint == endpoint) {
      if (route.endpoint == Endpoint::model) return "/v1/models/{id}";
      if (route.path == "/v1/responses/*") return "/v1/responses/{id}";
      return route.path;
    }
  }
  return "other";
}

}  // namespace tern::service
