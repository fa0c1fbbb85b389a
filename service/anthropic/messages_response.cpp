#include "service/anthropic/messages_response.h"

#include <algorithm>

namespace tern::service::anthropic {

std::string_view stop_reason(ChoiceFinishReason reason, std::string_view stop_sequence) {
  if (reason == ChoiceFinishReason::stop && !stop_sequence.empty()) return "stop_sequence";
  switch (reason) {
    case ChoiceFinishReason::length:
      return "max_tokens";
    case ChoiceFinishReason::tool_calls:
      return "tool_use";
    case ChoiceFinishReason::stop:
    case ChoiceFinishReason::cancelled:
      break;
  }
  return "end_turn";
}

void write_stop(api::JsonWriter& json, ChoiceFinishReason reason, std::string_view stop_sequence) {
  json.field("stop_reason", stop_reason(reason, stop_sequence));
  if (reason == ChoiceFinishReason::stop && !stop_sequence.empty()) {
    json.field("stop_sequence", stop_sequence);
  } else {
    json.null_field("stop_sequence");
  }
}

std::string message_id(std::string_view response_id) {
  std::string id(response_id);
  if (const std::size_t dash = id.find('-'); dash != std::string::npos) id[dash] = '_';
  return id;
}

std::string tool_use_id(std::string_view call_id) {
  return "toolu_" + std::string(call_id);
}

void write_message_usage(api::JsonWriter& json, const Usage& usage) {
  const int cached =
      usage.cached_tokens < usage.prompt_tokens ? usage.cached_tokens : usage.prompt_tokens;
  json.key("usage").begin_object();
  json.field("input_tokens", usage.prompt_tokens - cached)
      .field("cache_creation_input_tokens", 0)
      .field("cache_read_input_tokens", cached)
      .field("output_tokens", usage.completion_tokens);
  json.end_object();
}

std::string encode_message(const api::ResponseMeta& meta,
                           const std::vector<api::ChoiceOutput>& choices, const Usage& usage) {
  const api::ChoiceOutput empty;
  const api::ChoiceOutput& choice = choices.empty() ? empty : choices.front();
  std::string out;
  out.reserve(256 + choice.reasoning.size() + choice.text.size());
  api::JsonWriter json(out);
  json.begin_object()
      .field("id", meta.id)
      .field("type", "message")
      .field("role", "assistant")
      .field("model", meta.model);
  json.key("content").begin_array();
  if (!choice.reasoning.empty()) {
    json.begin_object().field("type", "thinking").field("thinking", choice.reasoning);
    json.field("signature", "").end_object();
  }
  // Text and calls in the order the model wrote them: each call knows how much text preceded it.
  const std::string_view text = choice.text;
  std::size_t text_written = 0;
  auto write_text_until = [&](std::size_t end) {
    end = std::clamp(end, text_written, text.size());
    if (end > text_written) {
      json.begin_object().field("type", "text");
      json.field("text", text.substr(text_written, end - text_written)).end_object();
    }
    text_written = end;
  };
  for (std::size_t i = 0; i < choice.tool_calls.size(); ++i) {
    const ToolCallOutput& call = choice.tool_calls[i];
    write_text_until(i < choice.tool_call_text_offsets.size() ? choice.tool_call_text_offsets[i]
                                                              : text.size());
    json.begin_object().field("type", "tool_use").field("id", tool_use_id(call.id));
    json.field("name", call.name).key("input");
    json.raw(call.arguments.empty() ? std::string_view("{}") : std::string_view(call.arguments));
    json.end_object();
  }
  write_text_until(text.size());
  json.end_array();
  write_stop(json, choice.finish_reason, choice.stop_sequence);
  write_message_usage(json, usage);
  json.end_object();
  return out;
}

std::string encode_count_tokens(std::size_t input_tokens) {
  std::string out;
  api::JsonWriter json(out);
  json.begin_object().key("input_tokens").unsigned_integer(input_tokens).end_object();
  return out;
}

}  // namespace tern::service::anthropic
