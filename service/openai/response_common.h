#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "service/generation_stream.h"
#include "service/openai/json_writer.h"

namespace tern::service::openai {

// What every response object of one request repeats.
struct ResponseMeta {
  std::string id;  // chatcmpl-... or cmpl-...
  std::int64_t created = 0;
  std::string model;
};

// One finished choice of a non-streamed response.
struct ChoiceOutput {
  std::string reasoning;  // from an output parser; see GenerationEvent
  std::string text;
  std::vector<ToolCallOutput> tool_calls;
  // Per call, the length `text` had when the call came: text after it was written after it.
  std::vector<std::size_t> tool_call_text_offsets;
  std::vector<TokenLogprob> logprobs;
  // Where in `text` the first logprob token starts: after an echoed prompt, its length.
  std::size_t logprobs_text_offset = 0;
  ChoiceFinishReason finish_reason = ChoiceFinishReason::stop;
  std::string stop_sequence;  // the stop string that ended it, if one did
};

// "usage":{prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details:{cached_tokens}}
void write_usage(JsonWriter& json, const Usage& usage);

// The end of a stream: the usage chunk (an empty `choices` and the final usage) when the client
// asked for it with stream_options.include_usage, then `data: [DONE]`. `object` is the chunk
// type, "chat.completion.chunk" or "text_completion".
void write_stream_end(std::string& out, const ResponseMeta& meta, std::string_view object,
                      bool include_usage, const Usage& usage);

// Turns one streamed response's events into SSE events in its API's shape: OpenAI's
// chat.completion.chunk or text_completion, Anthropic's message events, ... Each call appends
// whole SSE events to `out`.
class ChunkEncoder {
 public:
  virtual ~ChunkEncoder() = default;
  // Before any event, once the response headers are out; `prompt_tokens` as tokenized.
  virtual void start(std::string& /*out*/, int /*prompt_tokens*/) {}
  // A delta or finish event's reasoning, text, tool calls and logprobs (any may be empty).
  virtual void delta(std::string& out, const GenerationEvent& event) = 0;
  // `stop_sequence`: the stop string that ended the choice (finish stop), if one did.
  virtual void finish(std::string& out, int index, ChoiceFinishReason reason,
                      std::string_view stop_sequence = {}) = 0;
  // The end: OpenAI's usage chunk (only when the client asked for it) and [DONE].
  virtual void done(std::string& out, const Usage& usage) = 0;
  // The request failed after the headers went out. OpenAI's doors send the error object as a
  // data event, then [DONE], as vLLM does.
  virtual void error(std::string& out, const ApiError& error);
  // Nothing to send for sse_keepalive_s (a long prefill): a comment line by default.
  virtual void keepalive(std::string& out);
};

// A fresh id such as "chatcmpl-3f9c..." (prefix plus 32 random hex digits).
std::string make_response_id(std::string_view prefix);

}  // namespace tern::service::openai
