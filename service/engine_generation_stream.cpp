#include "service/engine_generation_stream.h"

#include "service/engine_error.h"

namespace tern::service {

EngineGenerationStream::EngineGenerationStream(const engine::Tokenizer& tokenizer,
                                               std::vector<Part> parts, Options options)
    : tokenizer_(tokenizer), parts_(std::move(parts)), options_(options) {
  start_part();
}

EngineGenerationStream::~EngineGenerationStream() {
  if (!terminal_queued_ || !pending_.empty()) cancel();
}

void EngineGenerationStream::start_part() {
  if (current_ >= parts_.size()) return;
  const Part& part = parts_[current_];
  if (!part.echo) return;
  for (int choice = 0; choice < part.choices; ++choice) {
    GenerationEvent event;
    event.index = part.first_index + choice;
    event.text = part.echo_text;
    pending_.push_back(std::move(event));
  }
}

std::string EngineGenerationStream::token_string(std::int32_t token) const {
  std::string text;
  tokenizer_.append_token_bytes(token, false, text);
  return text;
}

TokenLogprob EngineGenerationStream::token_logprob(const engine::RequestEvent& event) const {
  TokenLogprob logprob{token_string(event.token), event.logprob, {}};
  logprob.top.reserve(event.top_logprobs.size());
  for (const engine::TokenLogprob& alternative : event.top_logprobs) {
    logprob.top.push_back(TopLogprob{token_string(alternative.token), alternative.logprob});
  }
  return logprob;
}

void EngineGenerationStream::convert(engine::RequestEvent& event) {
  const Part& part = parts_[current_];
  GenerationEvent out;
  out.index = part.first_index + event.index;
  out.text = std::move(event.text);
  if (event.token >= 0) ++delivered_tokens_;
  if (options_.logprobs && event.token >= 0) out.logprobs.push_back(token_logprob(event));
  if (event.finish_reason) {
    switch (*event.finish_reason) {
      case engine::FinishReason::error: {
        GenerationEvent error;
        error.kind = GenerationEvent::Kind::error;
        error.error = api_error_from(Error{event.message, event.error_kind}, options_.model_name,
                                     options_.prompt_param);
        pending_.push_back(std::move(error));
        terminal_queued_ = true;
        // The other parts can no longer be reported; stop them.
        for (Part& other : parts_) other.handle.cancel();
        return;
      }
      case engine::FinishReason::stop:
        out.finish_reason = ChoiceFinishReason::stop;
        out.stop_sequence = std::move(event.stop_string);
        break;
      case engine::FinishReason::length:
        out.finish_reason = ChoiceFinishReason::length;
        break;
      case engine::FinishReason::cancelled:
        out.finish_reason = ChoiceFinishReason::cancelled;
        break;
    }
    out.kind = GenerationEvent::Kind::finish;
    pending_.push_back(std::move(out));
  } else if (!out.text.empty() || !out.logprobs.empty()) {
    pending_.push_back(std::move(out));
  }
  if (!event.done) return;
  usage_.prompt_tokens += event.usage.prompt_tokens;
  usage_.completion_tokens += event.usage.completion_tokens;
  usage_.cached_tokens += event.usage.cached_tokens;
  ++current_;
  if (current_ < parts_.size()) {
    start_part();
    return;
  }
  GenerationEvent done;
  done.kind = GenerationEvent::Kind::done;
  done.usage = usage_;
  pending_.push_back(std::move(done));
  terminal_queued_ = true;
}

std::optional<GenerationEvent> EngineGenerationStream::try_next() {
  while (pending_.empty() && !terminal_queued_ && current_ < parts_.size()) {
    std::optional<engine::RequestEvent> event = parts_[current_].handle.try_next();
    if (!event) return std::nullopt;
    convert(*event);
  }
  if (pending_.empty()) return std::nullopt;
  GenerationEvent event = std::move(pending_.front());
  pending_.pop_front();
  return event;
}

Usage EngineGenerationStream::usage_so_far() const {
  Usage usage = usage_;
  usage.prompt_tokens = options_.prompt_tokens;
  usage.completion_tokens = delivered_tokens_;
  return usage;
}

bool EngineGenerationStream::arm(engine::ChannelWaker& waker) {
  // Nothing more will come once the last event is queued; the caller reads it instead.
  if (!pending_.empty() || terminal_queued_ || current_ >= parts_.size()) return false;
  armed_part_ = current_;
  return parts_[current_].handle.arm(waker);
}

bool EngineGenerationStream::disarm() {
  return parts_[armed_part_].handle.disarm();
}

void EngineGenerationStream::cancel() {
  if (cancelled_) return;
  cancelled_ = true;
  for (Part& part : parts_) part.handle.cancel();
}

}  // namespace tern::service
