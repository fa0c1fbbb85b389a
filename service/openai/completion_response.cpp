#include "service/openai/completion_response.h"

#include "service/openai/response_envelope.h"

namespace tern::service::openai {

void write_completion_logprobs(api::JsonWriter& json, const std::vector<TokenLogprob>& logprobs,
                               std::size_t offset) {
  json.begin_object();
  json.key("tokens").begin_array();
  for (const TokenLogprob& token : logprobs) json.string(token.token);
  json.end_array().key("token_logprobs").begin_array();
  for (const TokenLogprob& token : logprobs) json.number(token.logprob);
  json.end_array().key("top_logprobs").begin_array();
  for (const TokenLogprob& token : logprobs) {
    json.begin_object();
    for (const TopLogprob& top : token.top) json.field(top.token, top.logprob);
    json.end_object();
  }
  json.end_array().key("text_offset").begin_array();
  for (const TokenLogprob& token : logprobs) {
    json.unsigned_integer(offset);
    offset += token.token.size();
  }
  json.end_array().end_object();
}

std::string encode_text_completion(const api::ResponseMeta& meta,
                                   const std::vector<api::ChoiceOutput>& choices,
                                   const Usage& usage, std::optional<int> logprobs) {
  std::string out;
  api::JsonWriter json(out);
  begin_response_object(json, meta, "text_completion");
  json.key("choices").begin_array();
  int index = 0;
  for (const api::ChoiceOutput& choice : choices) {
    json.begin_object().field("index", index++).field("text", choice.text);
    json.key("logprobs");
    if (logprobs) {
      write_completion_logprobs(json, choice.logprobs, choice.logprobs_text_offset);
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

void CompletionChunkEncoder::chunk(std::string& out, int index, std::string_view text,
                                   const std::vector<TokenLogprob>* logprobs,
                                   const ChoiceFinishReason* reason) {
  if (text_offset_.size() <= static_cast<std::size_t>(index)) text_offset_.resize(index + 1, 0);
  out += "data: ";
  api::JsonWriter json(out);
  begin_response_object(json, meta_, "text_completion");
  json.key("choices").begin_array().begin_object().field("index", index).field("text", text);
  json.key("logprobs");
  if (logprobs_ && logprobs != nullptr) {
    write_completion_logprobs(json, *logprobs, text_offset_[index]);
  } else {
    json.null();
  }
  if (reason != nullptr) {
    json.field("finish_reason", finish_reason_name(*reason));
  } else {
    json.null_field("finish_reason");
  }
  json.end_object().end_array();
  if (include_usage_) json.null_field("usage");
  json.end_object();
  out += "\n\n";
  text_offset_[index] += text.size();
}

void CompletionChunkEncoder::delta(std::string& out, const GenerationEvent& event) {
  if (event.index < 0 || (event.text.empty() && event.logprobs.empty())) return;
  chunk(out, event.index, event.text, &event.logprobs, nullptr);
}

void CompletionChunkEncoder::finish(std::string& out, int index, ChoiceFinishReason reason,
                                    std::string_view /*stop_sequence*/) {
  if (index < 0) return;
  chunk(out, index, "", nullptr, &reason);
}

void CompletionChunkEncoder::done(std::string& out, const Usage& usage) {
  write_stream_end(out, meta_, "text_completion", include_usage_, usage);
}

}  // namespace tern::service::openai
