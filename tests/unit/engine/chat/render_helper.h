#pragma once

// Renders a template over a JSON context for tests; failures come back as "ERROR: message" so
// that expectations read as one string comparison.
#include <string>
#include <string_view>

#include "engine/chat/chat_template.h"

namespace tern::engine::chat::testing {

inline std::string render(std::string_view source, std::string_view context_json = "{}") {
  Expected<ChatTemplate> compiled = ChatTemplate::parse(source);
  if (!compiled) return "ERROR: " + compiled.error().message;
  Expected<std::string> rendered = compiled->render_json(context_json);
  if (!rendered) return "ERROR: " + rendered.error().message;
  return *rendered;
}

inline std::string render_with_limits(std::string_view source, RenderLimits limits,
                                      std::string_view context_json = "{}") {
  Expected<ChatTemplate> compiled = ChatTemplate::parse(source, limits);
  if (!compiled) return "ERROR: " + compiled.error().message;
  Expected<std::string> rendered = compiled->render_json(context_json);
  if (!rendered) return "ERROR: " + rendered.error().message;
  return *rendered;
}

}  // namespace tern::engine::chat::testing
