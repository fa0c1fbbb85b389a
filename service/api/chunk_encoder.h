#pragma once

#include <string>
#include <string_view>

#include "service/api/api_error.h"
#include "service/generation_stream.h"

namespace tern::service::api {

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

}  // namespace tern::service::api
