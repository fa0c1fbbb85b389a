#include "service/openai/response_envelope.h"

#include "service/sse.h"

namespace tern::service::openai {

void begin_response_object(api::JsonWriter& json, const api::ResponseMeta& meta,
                           std::string_view object) {
  json.begin_object()
      .field("id", meta.id)
      .field("object", object)
      .field("created", meta.created)
      .field("model", meta.model);
}

void write_stream_end(std::string& out, const api::ResponseMeta& meta, std::string_view object,
                      bool include_usage, const Usage& usage) {
  if (include_usage) {
    out += "data: ";
    api::JsonWriter json(out);
    begin_response_object(json, meta, object);
    json.key("choices").begin_array().end_array();
    write_usage(json, usage);
    json.end_object();
    out += "\n\n";
  }
  out += kSseDone;
}

void write_usage(api::JsonWriter& json, const Usage& usage) {
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

}  // namespace tern::service::openai
