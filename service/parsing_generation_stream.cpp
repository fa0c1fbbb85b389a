#include "service/parsing_generation_stream.h"

#include <algorithm>

#include "service/random_id.h"

namespace tern::service {

ParsingGenerationStream::ParsingGenerationStream(std::unique_ptr<GenerationStream> inner,
                                                 OutputParserSpec spec)
    : inner_(std::move(inner)), spec_(std::move(spec)) {}

ParsingGenerationStream::Choice& ParsingGenerationStream::choice(int index) {
  const std::size_t slot = index < 0 ? 0 : static_cast<std::size_t>(index);
  if (choices_.size() <= slot) choices_.resize(slot + 1);
  if (!choices_[slot]) {
    std::unique_ptr<engine::chat::ReasoningParser> reasoning;
    if (!spec_.reasoning_parser.empty()) {
      reasoning =
          engine::chat::make_reasoning_parser(spec_.reasoning_parser, spec_.starts_in_reasoning);
    }
    std::unique_ptr<engine::chat::ToolCallParser> tools;
    if (!spec_.tool_parser.empty()) {
      tools = engine::chat::make_tool_call_parser(spec_.tool_parser, spec_.tool_names);
    }
    choices_[slot] = std::make_unique<Choice>(
        Choice{engine::chat::OutputParser(std::move(reasoning), std::move(tools)), 0});
  }
  return *choices_[slot];
}

namespace {

void erase_all(std::string& text, const std::vector<std::string>& markers) {
  for (const std::string& marker : markers) {
    for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
      text.erase(at, marker.size());
    }
  }
}

// Marker text left in the output came whole from the parser (it holds a marker until it
// decides); each call's position in the content moves with what is taken out before it.
void strip_markers(engine::chat::ParsedOutput& parsed, const std::vector<std::string>& markers) {
  std::string kept;
  std::size_t from = 0;
  auto keep_until = [&](std::size_t to) {
    std::string piece = parsed.content.substr(from, to - from);
    erase_all(piece, markers);
    kept += piece;
    from = to;
  };
  for (engine::chat::ParsedToolCall& call : parsed.tool_calls) {
    keep_until(std::clamp(call.content_before, from, parsed.content.size()));
    call.content_before = kept.size();
  }
  keep_until(parsed.content.size());
  parsed.content = std::move(kept);
  erase_all(parsed.reasoning, markers);
}

}  // namespace

// One event in, one or more out: each parsed call closes an event, so text written after a
// call always arrives in a later event than the call.
void ParsingGenerationStream::convert(GenerationEvent& event) {
  if (event.kind == GenerationEvent::Kind::done || event.kind == GenerationEvent::Kind::error) {
    if (event.kind == GenerationEvent::Kind::done) event.usage.reasoning_tokens = reasoning_tokens_;
    pending_.push_back(std::move(event));
    return;
  }
  Choice& state = choice(event.index);
  const bool was_reasoning = state.parser.in_reasoning();
  parsed_.clear();
  state.parser.feed(event.text, parsed_);
  // A stream's delta and finish events carry one token each (a finish may carry none: cancel);
  // a token that opened, continued or closed the reasoning counts as a reasoning token.
  if ((was_reasoning || state.parser.in_reasoning()) &&
      (event.kind == GenerationEvent::Kind::delta || !event.text.empty())) {
    ++reasoning_tokens_;
  }
  const bool finishing = event.kind == GenerationEvent::Kind::finish;
  if (finishing) state.parser.finish(parsed_);
  if (!spec_.hidden_markers.empty()) strip_markers(parsed_, spec_.hidden_markers);

  GenerationEvent out;
  out.index = event.index;
  out.reasoning = std::move(parsed_.reasoning);
  out.logprobs = std::move(event.logprobs);
  const std::string& content = parsed_.content;
  std::size_t content_used = 0;
  for (engine::chat::ParsedToolCall& call : parsed_.tool_calls) {
    if (spec_.max_tool_calls >= 0 && state.calls >= spec_.max_tool_calls) continue;
    const std::size_t before = std::clamp(call.content_before, content_used, content.size());
    out.text.append(content, content_used, before - content_used);
    content_used = before;
    out.tool_calls.push_back(ToolCallOutput{state.calls++, make_tool_call_id(),
                                            std::move(call.name), std::move(call.arguments)});
    pending_.push_back(std::move(out));
    out = GenerationEvent{};
    out.index = event.index;
  }
  out.text.append(content, content_used, std::string::npos);
  if (finishing) {
    out.kind = GenerationEvent::Kind::finish;
    out.finish_reason = event.finish_reason;
    out.stop_sequence = std::move(event.stop_sequence);
    if (out.finish_reason == ChoiceFinishReason::stop && state.calls > 0) {
      out.finish_reason = ChoiceFinishReason::tool_calls;
    }
    pending_.push_back(std::move(out));
  } else if (!out.text.empty() || !out.reasoning.empty() || !out.logprobs.empty()) {
    pending_.push_back(std::move(out));
  }
}

std::optional<GenerationEvent> ParsingGenerationStream::try_next() {
  while (pending_.empty()) {
    std::optional<GenerationEvent> event = inner_->try_next();
    if (!event) return std::nullopt;
    convert(*event);
  }
  GenerationEvent event = std::move(pending_.front());
  pending_.pop_front();
  return event;
}

bool ParsingGenerationStream::arm(engine::ChannelWaker& waker) {
  if (!pending_.empty()) return false;
  return inner_->arm(waker);
}

bool ParsingGenerationStream::disarm() {
  return inner_->disarm();
}

std::string make_tool_call_id() {
  // 128 bits, as every id the server hands out: an API writes it behind its own prefix.
  return random_id("", "");
}

}  // namespace tern::service
