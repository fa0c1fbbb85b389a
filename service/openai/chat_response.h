#pragma once

#include <string>
#include <vector>

#include "service/api/chunk_encoder.h"
#include "service/api/response_common.h"

namespace tern::service::openai {

// A non-streamed chat.completion object.
std::string encode_chat_completion(const api::ResponseMeta& meta,
                                   const std::vector<api::ChoiceOutput>& choices,
                                   const Usage& usage, bool with_logprobs);

// chat.completion.chunk events of one streamed response, in OpenAI's order: each choice's first
// chunk carries delta.role, content deltas follow, its last chunk carries finish_reason; then a
// usage chunk when include_usage, then [DONE]. Each call appends whole SSE events to `out`.
class ChatChunkEncoder final : public api::ChunkEncoder {
 public:
  ChatChunkEncoder(api::ResponseMeta meta, bool include_usage, bool with_logprobs)
      : meta_(std::move(meta)), include_usage_(include_usage), with_logprobs_(with_logprobs) {}

  void delta(std::string& out, const GenerationEvent& event) override;
  void finish(std::string& out, int index, ChoiceFinishReason reason,
              std::string_view stop_sequence = {}) override;
  // The usage chunk (only when include_usage) and [DONE].
  void done(std::string& out, const Usage& usage) override;

 private:
  void begin_chunk(std::string& out, api::JsonWriter& json);
  void end_chunk(std::string& out, api::JsonWriter& json);
  void role_if_first(std::string& out, int index);

  api::ResponseMeta meta_;
  bool include_usage_;
  bool with_logprobs_;
  std::vector<bool> role_sent_;
};

// {"id":"call_...","type":"function","function":{"name","arguments"}}; arguments "" without
// `with_arguments` (the first fragment of a streamed call).
void write_tool_call(api::JsonWriter& json, const ToolCallOutput& call, bool with_arguments);

// {"content":[{"token","logprob","bytes","top_logprobs":[...]}]}
void write_chat_logprobs(api::JsonWriter& json, const std::vector<TokenLogprob>& logprobs);

}  // namespace tern::service::openai
