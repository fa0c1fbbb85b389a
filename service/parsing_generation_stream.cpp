#include "service/parsing_generation_stream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>

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
  if (!spec_.hidden_markers.empty()) {
    // Marker text left in content came whole from the parser (it holds a marker until it
    // decides); calls' offsets into the content move with what is taken out before them.
    if (parsed_.tool_calls.empty()) {
      erase_all(parsed_.content, spec_.hidden_markers);
    } else {
      std::string kept;
      std::size_t from = 0;
      for (engine::chat::ParsedToolCall& call : parsed_.tool_calls) {
        const std::size_t to = std::clamp(call.content_before, from, parsed_.content.size());
        std::string piece = parsed_.content.substr(from, to - from);
        erase_all(piece, spec_.hidden_markers);
        kept += piece;
        call.content_before = kept.size();
        from = to;
      }
      std::string tail = parsed_.content.substr(from);
      erase_all(tail, spec_.hidden_markers);
      kept += tail;
      parsed_.content = std::move(kept);
    }
    erase_all(parsed_.reasoning, spec_.hidden_markers);
  }

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
    if (out.finish_reason == FinishReason::stop && state.calls > 0) {
      out.finish_reason = FinishReason::tool_calls;
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
  thread_local std::mt19937_64 generator{
      std::random_device{}() ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count())};
  static std::atomic<std::uint64_t> counter{0};
  static constexpr std::string_view kAlphabet =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  // Eight digits of base 62 use 48 of a word's 64 bits.
  std::uint64_t words[3] = {generator(), generator(),
                            generator() ^ counter.fetch_add(1, std::memory_order_relaxed)};
  std::string id;
  id.reserve(24);
  for (int i = 0; i < 24; ++i) {
    std::uint64_t& word = words[i / 8];
    id += kAlphabet[word % kAlphabet.size()];
    word /= kAlphabet.size();
  }
  return id;
}

}  // namespace tern::service
