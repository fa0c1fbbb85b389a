#pragma once

// The Response object of POST and GET /v1/responses, its output items and usage, shared by the
// non-streamed answer and the stream's response.* events.
#include <string>
#include <string_view>
#include <vector>

#include "service/api/chat_request.h"
#include "service/api/json_writer.h"
#include "service/api/response_common.h"
#include "service/generation_stream.h"
#include "service/responses/responses_request.h"

namespace tern::service::responses {

// One entry of `output`.
struct OutputItem {
  enum class Type { reasoning, message, function_call };
  Type type = Type::message;
  std::string id;          // rs_…, msg_… or fc_…
  std::string text;        // the reasoning, the message's text, or the call's arguments (JSON text)
  std::string call_id;     // function_call: call_ and the parser's id
  std::string name;        // function_call
  bool done = true;        // false: status "in_progress"
  bool cut_short = false;  // done, but by max_output_tokens or a failure: status "incomplete"
};

enum class ResponseStatus { in_progress, completed, incomplete, failed };

// A fresh "PREFIX_…" id (32 hex digits), for responses (resp) and items (msg, rs, fc).
std::string make_id(std::string_view prefix);
// "resp_…" from a response id made with the prefix "resp" ("resp-…").
std::string response_id(std::string_view made_id);

// The output items of a finished generation: reasoning, then messages and function calls in the
// order the model wrote them.
std::vector<OutputItem> output_items(const api::ChoiceOutput& choice);

// status "incomplete" (incomplete_details.reason "max_output_tokens") when the output hit
// max_output_tokens, else "completed".
ResponseStatus finished_status(ChoiceFinishReason reason);

void write_output_item(api::JsonWriter& json, const OutputItem& item);

// The whole Response object. `usage` is written only once the response is over (in_progress
// has null), `error` only for a failed one.
struct ResponseState {
  ResponseStatus status = ResponseStatus::in_progress;
  const std::vector<OutputItem>* output = nullptr;
  const Usage* usage = nullptr;
  const api::ApiError* error = nullptr;
};
void write_response(api::JsonWriter& json, const api::ResponseMeta& meta,
                    const ResponseSettings& settings, const ResponseState& state);
std::string encode_response(const api::ResponseMeta& meta, const ResponseSettings& settings,
                            const ResponseState& state);

// The output as the assistant turn a follow-up continues (previous_response_id).
api::ChatMessage assistant_message(const std::vector<OutputItem>& output);

// DELETE's answer: {"id","object":"response.deleted","deleted":true}.
std::string encode_deleted(std::string_view id);

// 404s in OpenAI's shape for an unknown response id: `param` previous_response_id when a
// request continued one, else none (GET and DELETE name it in the path).
api::ApiError response_not_found(std::string_view id, std::string_view param = {});

}  // namespace tern::service::responses
