#include "service/openai/response_common.h"

#include "service/random_id.h"
#include "service/sse.h"

namespace tern::service::openai {

void write_stream_end(std::string& out, const ResponseMeta& meta, std::string_view object,
                      bool include_usage, const Usage& usage) {
  if (include_usage) {
    out += "data: ";
    JsonWriter json(out);
    json.begin_object()
        .field("id", meta.id)
        .field("object", object)
        .field("created", meta.created)
        .field("model", meta.model);
    json.key("choices").begin_array().end_array();
    write_usage(json, usage);
    json.end_object();
    out += "\n\n";
  }
  out += kSseDone;
}

void write_usage(JsonWriter& json, const Usage& usage) {
  json.key("usage").begin_object();
  json.field("prompt_tokens", usage.prompt_tokens)
      .field("completion_tokens", usage.completion_tokens)
      .field("total_tokens", usage.prompt_tokens + usage.completion_tokens);
  json.key("prompt_tokens_details").begin_object().field("cached_tokens", usage.cached_tokens);
  json.end_object();
  if (usage.reasoning_tokens > 0) {
    json.key("completion_tokens_details").begin_object();
    json.field("reasoning_tokens", usage.reasoning_tokens).end_object();
  }
  json.end_object();
}

void ChunkEncoder::error(std::string& out, const ApiError& error) {
  append_sse_data(out, encode_error(error));
  out += kSseDone;
}

void ChunkEncoder::keepalive(std::string& out) {
  append_sse_comment(out, "keepalive");
}

std::string make_response_id(std::string_view prefix) {
  return random_id(prefix);
}

}  // namespace tern::service::openai
