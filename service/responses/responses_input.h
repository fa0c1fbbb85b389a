#pragma once

// Internal to the Responses parser: `input` (a string, or items) as chat messages.
#include <vector>

#include "service/api/chat_request.h"
#include "service/api/json_reader.h"

namespace tern::service::responses {

namespace json = api::json;

// A string is one user message. Items, in order:
// - `message` (role user, system, developer or assistant; content a string or input_text /
//   output_text parts, joined with "\n"); the `type` may be left out, as the SDKs allow;
// - `function_call` (call_id, name, arguments): a tool call of the assistant turn before it,
//   or of a new one;
// - `function_call_output` (call_id, output a string or input_text parts): a tool message;
// - `reasoning`: its reasoning_text content (else its summary texts) becomes the
//   reasoning_content of the assistant turn that follows it, and is dropped when none does.
// Other item types (hosted tool calls, item_reference, images) are a 400 naming the item.
api::json::Check read_input(const api::json::element& value,
                            std::vector<api::ChatMessage>& messages);

}  // namespace tern::service::responses
