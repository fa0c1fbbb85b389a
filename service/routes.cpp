#include "service/routes.h"

#include <optional>

#include "service/endpoint_handlers.h"

namespace tern::service {
namespace {

using namespace detail;
constexpr ErrorShape openai_errors = ErrorShape::openai;
constexpr ErrorShape anthropic_errors = ErrorShape::anthropic;

// method, path, label, handler, on the streams loop, error shape, operational, probe
constexpr Route kRoutes[] = {
    {"GET", "/health", "/health", &health_handler, false, openai_errors, true, true},
    {"GET", "/ready", "/ready", &ready_handler, false, openai_errors, true, true},
    {"GET", "/metrics", "/metrics", &metrics_handler, false, openai_errors, true, false},
    {"GET", "/v1/models", "/v1/models", &model_list_handler, false, openai_errors, false, false},
    {"GET", "/v1/models/*", "/v1/models/{id}", &model_card_handler, false, openai_errors, false,
     false},
    {"POST", "/v1/chat/completions", "/v1/chat/completions", &chat_completions_handler, true,
     openai_errors, false, false},
    {"POST", "/v1/completions", "/v1/completions", &completions_handler, true, openai_errors, false,
     false},
    {"POST", "/tokenize", "/tokenize", &tokenize_handler, true, openai_errors, false, false},
    {"POST", "/detokenize", "/detokenize", &detokenize_handler, true, openai_errors, false, false},
    {"POST", "/v1/messages", "/v1/messages", &messages_handler, true, anthropic_errors, false,
     false},
    {"POST", "/v1/messages/count_tokens", "/v1/messages/count_tokens", &count_tokens_handler, true,
     anthropic_errors, false, false},
    {"POST", "/v1/responses", "/v1/responses", &responses_handler, true, openai_errors, false,
     false},
    {"GET", "/v1/responses/*", "/v1/responses/{id}", &stored_response_handler, false, openai_errors,
     false, false},
    {"DELETE", "/v1/responses/*", "/v1/responses/{id}", &delete_response_handler, false,
     openai_errors, false, false},
};

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

api::ApiResult<RouteMatch> match_route(std::string_view method, std::string_view target) {
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
    return RouteMatch{&route, percent_decode(*parameter)};
  }
  if (path_known) return api::method_not_allowed(method, path);
  return api::route_not_found(method, path);
}

std::span<const Route> routes() {
  return kRoutes;
}

ErrorShape error_shape_of_unrouted(std::string_view target) {
  for (const Route& route : kRoutes) {
    const std::string_view path = route.path.substr(0, route.path.find('*'));
    if (route.errors != ErrorShape::openai && target.starts_with(path)) return route.errors;
  }
  return ErrorShape::openai;
}

}  // namespace tern::service
