#include "service/openai/chat_response.h"

#include "service/openai/response_envelope.h"

namespace tern::service::openai {
namespace {

void write_bytes(api::JsonWriter& json, std::string_view token) {
  json.key("bytes").begin_array();
  for (const char c : token) json.integer(static_cast<unsigned char>(c));
  json.end_array();
}

}  // namespace

void write_tool_call(api::JsonWriter& json, const ToolCallOutput& call, bool with_arguments) {
  std::string id = "call_";
  id += call.id;
  json.begin_object().field("id", id).field("type", "function");
  json.key("function").begin_object().field("name", call.name);
  json.field("arguments", with_arguments ? std::string_view(call.arguments) : "");
  json.end_object().end_object();
}

void write_chat_logprobs(api::JsonWriter& json, const std::vector<TokenLogprob>& logprobs) {
  json.begin_object().key("content").begin_array();
  for (const TokenLogprob& token : logprobs) {
    json.begin_object().field("token", token.token).field("logprob", token.logprob);
    write_bytes(json, token.token);
    json.key("top_logprobs").begin_array();
    for (const TopLogprob& top : token.top) {
      json.begin_object().field("token", top.token).field("logprob", top.logprob);
      write_bytes(json, top.token);
      json.end_object();
    }
    json.end_array().end_object();
  }
  json.end_array().end_object();
}

std::string encode_chat_completion(const api::ResponseMeta& meta,
                                   const std::vector<api::ChoiceOutput>& choices,
                                   const Usage& usage, bool with_logprobs) {
  std::string out;
  out.reserve(256);
  for (const api::ChoiceOutput& choice : choices)
    out.reserve(out.capacity() + choice.text.size() + 128);
  api::JsonWriter json(out);
  begin_response_object(json, meta, "chat.completion");
  json.key("choices").begin_array();
  int index = 0;
  for (const api::ChoiceOutput& choice : choices) {
    json.begin_object().field("index", index++);
    json.key("message").begin_object().field("role", "assistant");
    // OpenAI's content is null for a turn that only calls tools.
    if (choice.text.empty() && !choice.tool_calls.empty()) {
      json.null_field("content");
    } else {
      json.field("content", choice.text);
    }
    if (!choice.reasoning.empty()) json.field("reasoning_content", choice.reasoning);
    if (!choice.tool_calls.empty()) {
      json.key("tool_calls").begin_array();
      for (const ToolCallOutput& call : choice.tool_calls) write_tool_call(json, call, true);
      json.end_array();
    }
    json.end_object();
    json.key("logprobs");
    if (with_logprobs) {
      write_chat_logprobs(json, choice.logprobs);
    } else {
      json.null();
    }
    json.field("finish_reason", finish_reason_name(choice.finish_reason)).end_object();
  }
  json.end_array();
  write_usage(json, usage);
  json.end_object();
  return out;
}

void ChatChunkEncoder::begin_chunk(std::string& out, api::JsonWriter& json) {
  out += "data: ";
  begin_response_object(json, meta_, "chat.completion.chunk");
  json.key("choices").begin_array();
}

void ChatChunkEncoder::end_chunk(std::string& out, api::JsonWriter& json) {
  json.end_array();
  // With include_usage, OpenAI sends "usage":null on every chunk before the usage chunk.
  if (include_usage_) json.null_field("usage");
  json.end_object();
  out += "\n\n";
}

void ChatChunkEncoder::role_if_first(std::string& out, int index) {
  if (index < 0) return;
  if (role_sent_.size() <= static_cast<std::size_t>(index)) role_sent_.resize(index + 1, false);
  if (role_sent_[index]) return;
  role_sent_[index] = true;
  api::JsonWriter json(out);
  begin_chunk(out, json);
  json.begin_object().field("index", index);
  json.key("delta").begin_object().field("role", "assistant").field("content", "").end_object();
  json.null_field("logprobs").null_field("finish_reason").end_object();
  end_chunk(out, json);
}

void ChatChunkEncoder::delta(std::string& out, const GenerationEvent& event) {
  const int index = event.index;
  role_if_first(out, index);
  if (!event.reasoning.empty()) {
    api::JsonWriter json(out);
    begin_chunk(out, json);
    json.begin_object().field("index", index);
    json.key("delta").begin_object().field("reasoning_content", event.reasoning).end_object();
    json.null_field("logprobs").null_field("finish_reason").end_object();
    end_chunk(out, json);
  }
  if (!event.text.empty() || !event.logprobs.empty()) {
    api::JsonWriter json(out);
    begin_chunk(out, json);
    json.begin_object().field("index", index);
    json.key("delta").begin_object().field("content", event.text).end_object();
    json.key("logprobs");
    if (with_logprobs_) {
      write_chat_logprobs(json, event.logprobs);
    } else {
      json.null();
    }
    json.null_field("finish_reason").end_object();
    end_chunk(out, json);
  }
  // Each call as the SDKs' accumulators expect: index, id, type and name with empty arguments
  // first, then the arguments; a call is reported only once whole (engine/chat/output_parser.h).
  for (const ToolCallOutput& call : event.tool_calls) {
    for (const bool arguments : {false, true}) {
      api::JsonWriter json(out);
      begin_chunk(out, json);
      json.begin_object().field("index", index);
      json.key("delta").begin_object().key("tool_calls").begin_array();
      if (arguments) {
        json.begin_object().field("index", call.index);
        json.key("function").begin_object().field("arguments", call.arguments).end_object();
        json.end_object();
      } else {
        json.begin_object().field("index", call.index);
        std::string id = "call_";
        id += call.id;
        json.field("id", id).field("type", "function");
        json.key("function").begin_object().field("name", call.name).field("arguments", "");
        json.end_object().end_object();
      }
      json.end_array().end_object();
      json.null_field("logprobs").null_field("finish_reason").end_object();
      end_chunk(out, json);
    }
  }
}

void ChatChunkEncoder::finish(std::string& out, int index, ChoiceFinishReason reason,
                              std::string_view /*stop_sequence*/) {
  role_if_first(out, index);
  api::JsonWriter json(out);
  begin_chunk(out, json);
  json.begin_object().field("index", index);
  json.key("delta").begin_object().end_object();
  json.null_field("logprobs").field("finish_reason", finish_reason_name(reason)).end_object();
  end_chunk(out, json);
}

void ChatChunkEncoder::done(std::string& out, const Usage& usage) {
  write_stream_end(out, meta_, "chat.completion.chunk", include_usage_, usage);
}

}  // namespace tern::service::openai
