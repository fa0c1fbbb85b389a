#pragma once

// The non-streamed Message object of POST /v1/messages, count_tokens' answer, and the pieces the
// stream encoder shares with them.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "service/api/json_writer.h"
#include "service/api/response_common.h"
#include "service/generation_stream.h"

namespace tern::service::anthropic {

// end_turn, max_tokens or tool_use. A stop string ends the turn as end_turn too: the engine does
// not report which stop string matched, so stop_sequence is always null.
// `stop_sequence` non-empty (finish stop by a stop string) gives "stop_sequence".
std::string_view stop_reason(ChoiceFinishReason reason, std::string_view stop_sequence = {});
// "stop_reason" and "stop_sequence" (null unless a stop string ended the message).
void write_stop(api::JsonWriter& json, ChoiceFinishReason reason, std::string_view stop_sequence);

// Anthropic's "msg_…" from a response id made with the prefix "msg" ("msg-…").
std::string message_id(std::string_view response_id);
// Anthropic's "toolu_…" for a tool call's id.
std::string tool_use_id(std::string_view call_id);

// "usage":{input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens}.
// input_tokens counts only the prompt tokens not read from the prefix cache, as Anthropic's do:
// the three input counts add up to the whole prompt.
void write_message_usage(api::JsonWriter& json, const Usage& usage);

// The Message: content blocks thinking, text, then tool_use (input as an object), stop_reason,
// stop_sequence and usage. Only the first choice is used: the API has no `n`.
std::string encode_message(const api::ResponseMeta& meta,
                           const std::vector<api::ChoiceOutput>& choices, const Usage& usage);

// {"input_tokens":N}
std::string encode_count_tokens(std::size_t input_tokens);

}  // namespace tern::service::anthropic
