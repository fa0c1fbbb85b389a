#include "service/openai/chat_response.h"

namespace tern::service::openai {
namespace {

void write_bytes(JsonWriter& json, std::string_view token) {
  json.key("bytes").begin_array();
  for (const char c : token) json.integer(static_cast<unsigned char>(c));
  json.end_array();
}

}  // namespace

void write_chat_logprobs(JsonWriter& json, const std::vector<TokenLogprob>& logprobs) {
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

std::string encode_chat_completion(const ResponseMeta& meta,
                                   const std::vector<ChoiceOutput>& choices, const Usage& usage,
                                   bool with_logprobs) {
  std::string out;
  out.reserve(256);
  for (const ChoiceOutput& choice : choices) out.reserve(out.capacity() + choice.text.size() + 128);
  JsonWriter json(out);
  json.begin_object()
      .field("id", meta.id)
      .field("object", "chat.completion")
      .field("created", meta.created)
      .field("model", meta.model);
  json.key("choices").begin_array();
  int index = 0;
  for (const ChoiceOutput& choice : choices) {
    json.begin_object().field("index", index++);
    json.key("message").begin_object().field("role", "assistant").field("content", choice.text);
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

void ChatChunkEncoder::begin_chunk(std::string& out, JsonWriter& json) {
  out += "data: ";
  json.begin_object()
      .field("id", meta_.id)
      .field("object", "chat.completion.chunk")
      .field("created", meta_.created)
      .field("model", meta_.model);
  json.key("choices").begin_array();
}

void ChatChunkEncoder::end_chunk(std::string& out, JsonWriter& json) {
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
  JsonWriter json(out);
  begin_chunk(out, json);
  json.begin_object().field("index", index);
  json.key("delta").begin_object().field("role", "assistant").field("content", "").end_object();
  json.null_field("logprobs").null_field("finish_reason").end_object();
  end_chunk(out, json);
}

void ChatChunkEncoder::delta(std::string& out, int index, std::string_view text,
                             const std::vector<TokenLogprob>& logprobs) {
  role_if_first(out, index);
  if (text.empty() && logprobs.empty()) return;
  JsonWriter json(out);
  begin_chunk(out, json);
  json.begin_object().field("index", index);
  json.key("delta").begin_object().field("content", text).end_object();
  json.key("logprobs");
  if (with_logprobs_) {
    write_chat_logprobs(json, logprobs);
  } else {
    json.null();
  }
  json.null_field("finish_reason").end_object();
  end_chunk(out, json);
}

void ChatChunkEncoder::finish(std::string& out, int index, FinishReason reason) {
  role_if_first(out, index);
  JsonWriter json(out);
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
