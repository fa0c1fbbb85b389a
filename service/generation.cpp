#include "service/generation.h"

namespace tern::service {

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::tool_calls:
      return "tool_calls";
    case FinishReason::cancelled:
      return "abort";  // vLLM's name; OpenAI has none, as its clients never see one
  }
  return "stop";
}

}  // namespace tern::service
