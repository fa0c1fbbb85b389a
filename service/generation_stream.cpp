#include "service/generation_stream.h"

namespace tern::service {

std::string_view finish_reason_name(ChoiceFinishReason reason) {
  switch (reason) {
    case ChoiceFinishReason::stop:
      return "stop";
    case ChoiceFinishReason::length:
      return "length";
    case ChoiceFinishReason::tool_calls:
      return "tool_calls";
    case ChoiceFinishReason::cancelled:
      return "abort";  // vLLM's name; OpenAI has none, as its clients never see one
  }
  return "stop";
}

}  // namespace tern::service
