#pragma once

// What a running generation reports back to the HTTP side, and the stream it reports through.
// No Asio here: the engine adapter implements GenerationStream over engine::RequestHandle.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/spsc_channel.h"
#include "service/api/api_error.h"

namespace tern::service {

enum class ChoiceFinishReason { stop, length, tool_calls, cancelled };
std::string_view finish_reason_name(ChoiceFinishReason reason);

struct TopLogprob {
  std::string token;  // the token's text (may be a partial UTF-8 sequence)
  double logprob = 0;
};

// One sampled token with its log-probability and, when asked for, the best alternatives.
struct TokenLogprob {
  std::string token;
  double logprob = 0;
  std::vector<TopLogprob> top;
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;  // prompt tokens served from the prefix cache
  // Completion tokens the output parser read while inside reasoning (the close marker included),
  // counted by ParsingGenerationStream; 0 without a reasoning parser.
  int reasoning_tokens = 0;
};

// A tool call found in the output (engine/chat/output_parser.h), whole. Each API writes `id`
// behind its own prefix (call_, toolu_, fc_).
struct ToolCallOutput {
  int index = 0;   // the call's number within its choice, from 0
  std::string id;  // unique within the process, letters and digits
  std::string name;
  std::string arguments;  // a JSON object's text
};

struct GenerationEvent {
  enum class Kind {
    delta,   // new text for choice `index`
    finish,  // choice `index` ended with `finish_reason` (may carry a last piece of text)
    done,    // every choice has finished; `usage` is final. Always the last event.
    error,   // the request failed after it started; `error` says why. Also last.
  };
  Kind kind = Kind::delta;
  int index = 0;
  // With an output parser (tools or reasoning), `reasoning` comes first, then `text` (the
  // answer's content), then `tool_calls`; an event never holds text that followed a call, so
  // parts keep their order across events. Without one, everything is `text`.
  std::string reasoning;
  std::string text;
  std::vector<ToolCallOutput> tool_calls;
  std::vector<TokenLogprob> logprobs;  // one per token in `text`, when logprobs were requested
  ChoiceFinishReason finish_reason = ChoiceFinishReason::stop;
  std::string stop_sequence;  // finish: the stop string that ended the choice, if one did
  Usage usage;
  api::ApiError error;
};

// One accepted request's events, consumed by one connection. Mirrors engine::SpscChannel's
// consumer side, so an adapter over RequestHandle is a few forwarding lines.
class GenerationStream {
 public:
  virtual ~GenerationStream() = default;

  // Never blocks. nullopt when no event is ready yet.
  virtual std::optional<GenerationEvent> try_next() = 0;

  // Registers `waker` for the next event. Returns false, registering nothing, when an event is
  // already there. When it returns true, waker.wake() is called exactly once (on any thread)
  // unless disarm() takes the waker back first.
  virtual bool arm(engine::ChannelWaker& waker) = 0;
  // Withdraws an armed waker. Returns false when the producer already took it; its wake() is
  // then on the way, and the caller keeps the waker alive until it arrives.
  virtual bool disarm() = 0;

  // The client went away, or was dropped as too slow: stop generating and free the request's
  // KV blocks. Events may still arrive afterwards and are ignored. Destroying a stream that has
  // not delivered `done` or `error` cancels it too.
  virtual void cancel() = 0;

  // The prompt's length in tokens, as tokenized before the request was queued (Anthropic's
  // message_start reports it before any output); 0 when unknown.
  virtual int prompt_tokens() const { return 0; }

  // What the stream has delivered so far: the prompt and the completion tokens it has handed
  // out. The access log reports this for a stream that ended before its `done` (a client that
  // left, a drain that cut it), whose final usage never came.
  virtual Usage usage_so_far() const { return Usage{prompt_tokens(), 0, 0, 0}; }
};

}  // namespace tern::service
