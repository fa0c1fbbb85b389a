#pragma once

// A GenerationStream whose text is read back into an assistant message's parts: reasoning,
// content and tool calls (engine/chat/output_parser.h), one parser per choice. It sits over the
// engine's stream (or a test's), so every API door gets the same parts and only encodes them.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "engine/chat/output_parser.h"
#include "service/generation_stream.h"

namespace tern::service {

struct OutputParserSpec {
  std::string tool_parser;           // vLLM's name; empty: tool calls stay text
  std::string reasoning_parser;      // vLLM's name; empty: no reasoning split
  bool starts_in_reasoning = false;  // the prompt ends in the opening marker
  std::vector<std::string> tool_names;
  int max_tool_calls = -1;  // per choice; -1: no limit (parallel_tool_calls false gives 1)
  // Marker texts that are special tokens, taken out of what reaches the client when it asked
  // for skip_special_tokens: the parser saw them, and text they did not make a call of is
  // content without them.
  std::vector<std::string> hidden_markers;

  bool active() const { return !tool_parser.empty() || !reasoning_parser.empty(); }
};

class ParsingGenerationStream final : public GenerationStream {
 public:
  ParsingGenerationStream(std::unique_ptr<GenerationStream> inner, OutputParserSpec spec);

  std::optional<GenerationEvent> try_next() override;
  bool arm(engine::ChannelWaker& waker) override;
  bool disarm() override;
  void cancel() override { inner_->cancel(); }
  int prompt_tokens() const override { return inner_->prompt_tokens(); }
  Usage usage_so_far() const override {
    Usage usage = inner_->usage_so_far();
    usage.reasoning_tokens = reasoning_tokens_;
    return usage;
  }

 private:
  struct Choice {
    engine::chat::OutputParser parser;
    int calls = 0;
  };
  Choice& choice(int index);
  void convert(GenerationEvent& event);

  std::unique_ptr<GenerationStream> inner_;
  OutputParserSpec spec_;
  std::vector<std::unique_ptr<Choice>> choices_;  // by index, made at a choice's first event
  std::deque<GenerationEvent> pending_;
  int reasoning_tokens_ = 0;           // over every choice
  engine::chat::ParsedOutput parsed_;  // scratch, reused
};

// A tool call's id: 32 hex digits, 128 random bits (random_id.h).
std::string make_tool_call_id();

}  // namespace tern::service
