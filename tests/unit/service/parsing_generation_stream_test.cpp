// The output parsers between the engine's text and the API encoders: parts come out in order,
// calls close their event, and a choice that called tools finishes with tool_calls.
#include <gtest/gtest.h>

#include <deque>

#include "service/parsing_generation_stream.h"

namespace tern::service {
namespace {

class ScriptedStream final : public GenerationStream {
 public:
  explicit ScriptedStream(std::deque<GenerationEvent> events) : events_(std::move(events)) {}
  std::optional<GenerationEvent> try_next() override {
    if (events_.empty()) return std::nullopt;
    GenerationEvent event = std::move(events_.front());
    events_.pop_front();
    return event;
  }
  bool arm(engine::ChannelWaker&) override { return false; }
  bool disarm() override { return true; }
  void cancel() override {}
  int prompt_tokens() const override { return 7; }

 private:
  std::deque<GenerationEvent> events_;
};

GenerationEvent delta(int index, std::string text) {
  GenerationEvent event;
  event.index = index;
  event.text = std::move(text);
  return event;
}

GenerationEvent finish(int index, std::string text,
                       ChoiceFinishReason reason = ChoiceFinishReason::stop) {
  GenerationEvent event = delta(index, std::move(text));
  event.kind = GenerationEvent::Kind::finish;
  event.finish_reason = reason;
  return event;
}

GenerationEvent done() {
  GenerationEvent event;
  event.kind = GenerationEvent::Kind::done;
  return event;
}

std::vector<GenerationEvent> drain(GenerationStream& stream) {
  std::vector<GenerationEvent> events;
  while (std::optional<GenerationEvent> event = stream.try_next()) events.push_back(*event);
  return events;
}

OutputParserSpec qwen3_spec() {
  OutputParserSpec spec;
  spec.tool_parser = "hermes";
  spec.reasoning_parser = "qwen3";
  spec.tool_names = {"get_weather"};
  return spec;
}

TEST(ParsingGenerationStream, SplitsReasoningContentAndCallsInOrder) {
  std::deque<GenerationEvent> script;
  for (const char* piece :
       {"<think>\nSunny?", "</think>\n\nLet me ", "check.<tool_", "call>\n",
        R"({"name": "get_weather", "arguments": {"city": "Paris"}})", "\n</tool_call>\nDone"}) {
    script.push_back(delta(0, piece));
  }
  script.push_back(finish(0, "."));
  script.push_back(done());
  ParsingGenerationStream stream(std::make_unique<ScriptedStream>(std::move(script)), qwen3_spec());
  EXPECT_EQ(stream.prompt_tokens(), 7);
  const std::vector<GenerationEvent> events = drain(stream);
  std::string reasoning;
  std::string content_before_call;
  std::string content_after_call;
  std::vector<ToolCallOutput> calls;
  for (const GenerationEvent& event : events) {
    if (event.kind == GenerationEvent::Kind::done) continue;
    reasoning += event.reasoning;
    (calls.empty() ? content_before_call : content_after_call) += event.text;
    for (const ToolCallOutput& call : event.tool_calls) calls.push_back(call);
  }
  EXPECT_EQ(reasoning, "Sunny?");
  EXPECT_EQ(content_before_call, "Let me check.");
  EXPECT_EQ(content_after_call, "Done.");  // the newline after a call is the format's
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].index, 0);
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, R"({"city": "Paris"})");
  EXPECT_EQ(calls[0].id.size(), 32u);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[events.size() - 2].kind, GenerationEvent::Kind::finish);
  EXPECT_EQ(events[events.size() - 2].finish_reason, ChoiceFinishReason::tool_calls);
  EXPECT_EQ(events.back().kind, GenerationEvent::Kind::done);
  // The pieces that opened and closed the reasoning (one token each here).
  EXPECT_EQ(events.back().usage.reasoning_tokens, 2);
}

TEST(ParsingGenerationStream, EachChoiceHasItsOwnParserAndCallNumbers) {
  const std::string call = R"(<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>)";
  std::deque<GenerationEvent> script;
  script.push_back(delta(0, call));
  script.push_back(delta(1, "plain <tool_"));
  script.push_back(delta(0, call));
  script.push_back(finish(1, "answer"));
  script.push_back(finish(0, ""));
  script.push_back(done());
  ParsingGenerationStream stream(std::make_unique<ScriptedStream>(std::move(script)), qwen3_spec());
  std::vector<int> call_indices;
  std::string second_choice_text;
  ChoiceFinishReason second_reason = ChoiceFinishReason::cancelled;
  for (const GenerationEvent& event : drain(stream)) {
    for (const ToolCallOutput& output : event.tool_calls) {
      EXPECT_EQ(event.index, 0);
      call_indices.push_back(output.index);
    }
    if (event.index == 1) second_choice_text += event.text;
    if (event.index == 1 && event.kind == GenerationEvent::Kind::finish) {
      second_reason = event.finish_reason;
    }
  }
  EXPECT_EQ(call_indices, (std::vector<int>{0, 1}));
  EXPECT_EQ(second_choice_text, "plain <tool_answer");
  EXPECT_EQ(second_reason, ChoiceFinishReason::stop);
}

// parallel_tool_calls false: the first call of a turn, and no more.
TEST(ParsingGenerationStream, AtMostOneCallWithoutParallelToolCalls) {
  const std::string call = R"(<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>)";
  std::deque<GenerationEvent> script;
  script.push_back(delta(0, call + call));
  script.push_back(finish(0, call));
  script.push_back(done());
  OutputParserSpec spec = qwen3_spec();
  spec.max_tool_calls = 1;
  ParsingGenerationStream stream(std::make_unique<ScriptedStream>(std::move(script)),
                                 std::move(spec));
  int calls = 0;
  for (const GenerationEvent& event : drain(stream)) {
    calls += static_cast<int>(event.tool_calls.size());
    if (event.kind == GenerationEvent::Kind::finish) {
      EXPECT_EQ(event.finish_reason, ChoiceFinishReason::tool_calls);
    }
  }
  EXPECT_EQ(calls, 1);
}

// Markers that are special tokens reach the parser, but not a client that asked for special
// tokens to be skipped: a malformed call's text comes back without them.
TEST(ParsingGenerationStream, HiddenMarkersLeaveTheContent) {
  const std::string good = R"(<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>)";
  const std::string broken = R"(<tool_call>{"name": </tool_call>)";
  std::deque<GenerationEvent> script;
  script.push_back(delta(0, "a" + broken + "b" + good + "c"));
  script.push_back(finish(0, ""));
  script.push_back(done());
  OutputParserSpec spec = qwen3_spec();
  spec.hidden_markers = {"<tool_call>", "</tool_call>"};
  ParsingGenerationStream stream(std::make_unique<ScriptedStream>(std::move(script)),
                                 std::move(spec));
  std::string before_call;
  std::string after_call;
  int calls = 0;
  for (const GenerationEvent& event : drain(stream)) {
    (calls == 0 ? before_call : after_call) += event.text;
    calls += static_cast<int>(event.tool_calls.size());
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(before_call, R"(a{"name": b)");
  EXPECT_EQ(after_call, "c");
}

TEST(ParsingGenerationStream, AMalformedCallIsContentAndTheReasonStays) {
  const std::string broken = R"(<tool_call>{"name": "get_weather", "arguments": {</tool_call>)";
  std::deque<GenerationEvent> script;
  script.push_back(delta(0, broken));
  script.push_back(finish(0, "", ChoiceFinishReason::length));
  script.push_back(done());
  ParsingGenerationStream stream(std::make_unique<ScriptedStream>(std::move(script)), qwen3_spec());
  std::string text;
  for (const GenerationEvent& event : drain(stream)) {
    EXPECT_TRUE(event.tool_calls.empty());
    text += event.text;
    if (event.kind == GenerationEvent::Kind::finish) {
      EXPECT_EQ(event.finish_reason, ChoiceFinishReason::length);
    }
  }
  EXPECT_EQ(text, broken);
}

TEST(ToolCallId, Is128BitsOfHexAndUnique) {
  const std::string first = make_tool_call_id();
  const std::string second = make_tool_call_id();
  EXPECT_EQ(first.size(), 32u);
  EXPECT_NE(first, second);
  for (const char c : first) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << first;
}

}  // namespace
}  // namespace tern::service
