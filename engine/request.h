#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/expected.h"
#include "engine/sampler.h"
#include "engine/sampling_params.h"
#include "engine/spsc_channel.h"

namespace tern::engine {

namespace grammar {
class TokenizedGrammar;
}

inline constexpr std::size_t kMaxStopStrings = 16;
// What one token of a structured output may cost its grammar by default, in GrammarMatcher's
// step work (units of about a nanosecond): over ten times the most a step of the test grammars
// takes over the Qwen3 and Llama 3 vocabularies (docs/config.md). And what one sample's grammar
// may hold.
inline constexpr std::uint64_t kDefaultGrammarStepWork = 25'000'000;
inline constexpr std::uint64_t kGrammarMatcherMemoryBytes = 32ull << 20;
inline constexpr std::int32_t kMaxParallelSamples = 128;

// When to stop generating (OpenAI / vLLM semantics). EOS and stop_token_ids are suppressed until
// min_tokens tokens exist, and stop strings are only looked for from then on.
struct StopCondition {
  std::int32_t max_tokens = 16;
  std::int32_t min_tokens = 0;
  std::vector<std::int32_t> stop_token_ids;
  std::vector<std::string> stop_strings;  // at most kMaxStopStrings; never emitted
  bool ignore_eos = false;
};

// What the engine does when a request's event channel is full: its consumer is too slow.
enum class SlowConsumerPolicy {
  pause,   // stop scheduling that request (it keeps its KV) until the consumer catches up
  cancel,  // finish it as cancelled, with the message "slow_consumer"
};

// A cap on how long a reasoning model thinks (OpenAI's reasoning_effort, Anthropic's
// thinking.budget_tokens): once `max_tokens` tokens of reasoning are out, `close_tokens` (the
// close marker `close_token` as the chat template writes it, newlines around it) are forced,
// and the answer follows. Reasoning is tracked by the markers' own token ids.
struct ReasoningBudget {
  std::int32_t max_tokens = -1;      // -1: no cap
  bool starts_in_reasoning = false;  // the prompt ends in the open marker
  std::int32_t open_token = -1;      // `<think>`; -1 when it is not one token
  std::int32_t close_token = -1;     // `</think>`
  std::vector<std::int32_t> close_tokens;

  bool active() const { return max_tokens >= 0 && close_token >= 0 && !close_tokens.empty(); }
};

// One generation request, tokenized. `n` samples share the prompt's KV blocks.
struct Request {
  std::vector<std::int32_t> prompt_ids;
  SamplingParams sampling;
  StopCondition stop;
  std::int32_t n = 1;
  bool skip_special_tokens = true;
  // Special tokens written into the text even with skip_special_tokens (sorted): the markers
  // the service's output parser reads, whatever the client asked.
  std::vector<std::int32_t> kept_special_tokens;
  ReasoningBudget reasoning_budget;
  // Structured output: every sample's text is a sentence of this grammar (outside reasoning),
  // or stops at max_tokens. Null: unconstrained.
  std::shared_ptr<const grammar::TokenizedGrammar> grammar;
  std::string grammar_field;  // the request field it came from, named in errors
  SlowConsumerPolicy slow_consumer = SlowConsumerPolicy::pause;
  std::size_t channel_capacity = 0;  // events; 0 takes EngineOptions::event_channel_capacity
};

enum class FinishReason { stop, length, cancelled, error };
std::string_view to_string(FinishReason reason);

struct Usage {
  std::int32_t prompt_tokens = 0;
  std::int32_t completion_tokens = 0;  // over all n samples
  std::int32_t cached_tokens = 0;      // prompt tokens found in the prefix cache
};

// One message from the engine to a request's consumer: normally one generated token of one
// sample, with its text delta. Text that might start a stop string is held back and arrives with
// a later event (or never, if the stop string completes). A sample's last event carries its
// finish reason; the request's very last event has `done` set and the final usage.
struct RequestEvent {
  std::int32_t index = 0;   // which of the n samples
  std::int32_t token = -1;  // -1: no token (a finish-only event, e.g. on cancel or error)
  std::string text;
  float logprob = 0.0f;                    // of `token`, when sampling.logprobs
  std::vector<TokenLogprob> top_logprobs;  // sampling.top_logprobs alternatives, best first
  std::optional<FinishReason> finish_reason;
  std::string message;      // for error, and for cancelled by the engine ("slow_consumer")
  std::string stop_string;  // finish stop: the stop string that ended the sample, if one did
  ErrorKind error_kind = ErrorKind::internal;  // for error
  bool done = false;
  Usage usage;  // set when done
};

namespace detail {

// Wakes a thread blocked in RequestHandle::next().
class BlockingWaker final : public ChannelWaker {
 public:
  void wake() override;
  void wait();

 private:
  std::atomic<std::uint32_t> signalled_{0};
};

// What a request's engine thread and its consumer share.
struct RequestChannel {
  RequestChannel(std::uint64_t request_id, std::size_t capacity,
                 std::shared_ptr<ChannelWaker> engine_waker)
      : id(request_id), events(capacity), engine(std::move(engine_waker)) {}

  const std::uint64_t id;
  SpscChannel<RequestEvent> events;
  std::atomic<bool> cancel_requested{false};
  std::atomic<bool> engine_waiting_for_room{false};  // a paused sample waits on the consumer
  std::shared_ptr<ChannelWaker> engine;              // wakes the engine thread
  BlockingWaker blocking_waker;
};

}  // namespace detail

// The consumer's side of a submitted request: its event stream and its cancel switch. Methods
// that read events are for one consumer thread at a time; cancel() may be called from anywhere.
// Dropping the handle does not cancel the request; call cancel() first.
class RequestHandle {
 public:
  RequestHandle() = default;
  explicit RequestHandle(std::shared_ptr<detail::RequestChannel> channel)
      : channel_(std::move(channel)) {}

  bool valid() const { return channel_ != nullptr; }
  std::uint64_t id() const { return channel_->id; }

  // The next event, if one is there.
  std::optional<RequestEvent> try_next();

  // Blocks until the next event (CLI and tests; the service uses arm() instead).
  RequestEvent next();

  // Arms a one-shot `waker` for the next event, e.g. one that resumes a coroutine. Returns
  // false when events are already there (pop them instead). See SpscChannel::arm().
  bool arm(ChannelWaker& waker) { return channel_->events.arm(waker); }
  bool disarm() { return channel_->events.disarm(); }

  // Asks the engine to stop the request; its blocks are freed at the next step, and a last
  // event with FinishReason::cancelled follows (unless it finished first).
  void cancel();

 private:
  std::shared_ptr<detail::RequestChannel> channel_;
};

// The events a request's channel holds: `per_request` (at least 2), plus one for each sample
// beyond the first. The engine keeps a slot free for every unfinished sample's last event, so
// without the extra slots an n = 64 request would have a single slot left for its tokens and a
// consumer that falls behind would get them back one engine wake-up at a time.
std::size_t event_channel_capacity(std::size_t per_request, std::int32_t n);

// What validation needs to know of the model.
struct RequestLimits {
  std::int32_t vocab_size = 0;
  std::int32_t context_length = 0;
  bool has_tokenizer = false;  // stop strings need one
};

// Checks a request before it is queued. The error message starts with the offending field's
// name, as OpenAI's `param` ("top_p: must be in (0, 1], got 1.5").
Status validate_request(const Request& request, const RequestLimits& limits);

}  // namespace tern::engine
