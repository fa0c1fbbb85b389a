#pragma once

#include <string>
#include <string_view>

#include "service/api/json_writer.h"
#include "service/api/response_common.h"
#include "service/generation_stream.h"

namespace tern::service::openai {

// What every OpenAI response object and chunk opens with: {"id", "object", "created", "model"
// (the object is left open for its choices).
void begin_response_object(api::JsonWriter& json, const api::ResponseMeta& meta,
                           std::string_view object);

// "usage":{prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details:{cached_tokens}}
void write_usage(api::JsonWriter& json, const Usage& usage);

// The end of a stream: the usage chunk (an empty `choices` and the final usage) when the client
// asked for it with stream_options.include_usage, then `data: [DONE]`. `object` is the chunk
// type, "chat.completion.chunk" or "text_completion".
void write_stream_end(std::string& out, const api::ResponseMeta& meta, std::string_view object,
                      bool include_usage, const Usage& usage);

}  // namespace tern::service::openai
