#pragma once

// Shared helpers for the output parser tests: building a parser by name, feeding it text in
// given pieces, and comparing what came out.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/output_parser.h"

namespace tern::engine::chat::testing {

// Which parsers, as a request would pick them; empty names mean none.
struct ParserSpec {
  std::string reasoning;
  std::string tools;
  bool starts_in_reasoning = false;
  std::vector<std::string> tool_names = {"get_weather", "search", "f", "calc"};
};

inline OutputParser make_output_parser(const ParserSpec& spec) {
  std::unique_ptr<ReasoningParser> reasoning;
  std::unique_ptr<ToolCallParser> tools;
  if (!spec.reasoning.empty()) {
    reasoning = make_reasoning_parser(spec.reasoning, spec.starts_in_reasoning);
    EXPECT_NE(reasoning, nullptr) << spec.reasoning;
  }
  if (!spec.tools.empty()) {
    tools = make_tool_call_parser(spec.tools, spec.tool_names);
    EXPECT_NE(tools, nullptr) << spec.tools;
  }
  return OutputParser(std::move(reasoning), std::move(tools));
}

// A part's call positions count from the start of the part's content; the total's from the
// start of all of it.
inline void append_output(ParsedOutput& total, const ParsedOutput& part) {
  const std::size_t content_so_far = total.content.size();
  total.content += part.content;
  total.reasoning += part.reasoning;
  for (ParsedToolCall call : part.tool_calls) {
    call.content_before += content_so_far;
    total.tool_calls.push_back(std::move(call));
  }
}

// All the parser gave out, fed `pieces` in order (each piece's output cleared, as a stream's
// caller does) and then finished.
inline ParsedOutput parse_pieces(const ParserSpec& spec,
                                 const std::vector<std::string_view>& pieces) {
  OutputParser parser = make_output_parser(spec);
  ParsedOutput total;
  ParsedOutput part;
  for (std::string_view piece : pieces) {
    part.clear();
    parser.feed(piece, part);
    append_output(total, part);
  }
  part.clear();
  parser.finish(part);
  append_output(total, part);
  return total;
}

inline ParsedOutput parse_whole(const ParserSpec& spec, std::string_view text) {
  return parse_pieces(spec, {text});
}

inline ParsedOutput parse_split(const ParserSpec& spec, std::string_view text, std::size_t cut) {
  return parse_pieces(spec, {text.substr(0, cut), text.substr(cut)});
}

inline ParsedOutput parse_bytes(const ParserSpec& spec, std::string_view text) {
  std::vector<std::string_view> pieces;
  for (std::size_t i = 0; i < text.size(); ++i) pieces.push_back(text.substr(i, 1));
  return parse_pieces(spec, pieces);
}

inline std::string describe(const ParsedOutput& out) {
  std::string text = "content=[" + out.content + "] reasoning=[" + out.reasoning + "] calls=";
  for (const ParsedToolCall& call : out.tool_calls) {
    text += "{" + call.name + " " + call.arguments + "}";
  }
  return text;
}

inline ::testing::AssertionResult same_output(const ParsedOutput& expected,
                                              const ParsedOutput& actual) {
  bool same = expected.content == actual.content && expected.reasoning == actual.reasoning &&
              expected.tool_calls.size() == actual.tool_calls.size();
  for (std::size_t i = 0; same && i < expected.tool_calls.size(); ++i) {
    same = expected.tool_calls[i].name == actual.tool_calls[i].name &&
           expected.tool_calls[i].arguments == actual.tool_calls[i].arguments;
  }
  if (same) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "\n  expected " << describe(expected) << "\n  actual   " << describe(actual);
}

// Two parses of the same text agree on everything, where each call stands in the content too.
inline ::testing::AssertionResult same_parse(const ParsedOutput& expected,
                                             const ParsedOutput& actual) {
  ::testing::AssertionResult same = same_output(expected, actual);
  if (!same) return same;
  for (std::size_t i = 0; i < expected.tool_calls.size(); ++i) {
    if (expected.tool_calls[i].content_before != actual.tool_calls[i].content_before) {
      return ::testing::AssertionFailure()
             << "call " << i << " after " << actual.tool_calls[i].content_before
             << " bytes of content, expected " << expected.tool_calls[i].content_before << ": "
             << describe(actual);
    }
  }
  return ::testing::AssertionSuccess();
}

// A parse's expected output, written out.
inline ParsedOutput expect_output(std::string content, std::string reasoning = {},
                                  std::vector<ParsedToolCall> calls = {}) {
  ParsedOutput out;
  out.content = std::move(content);
  out.reasoning = std::move(reasoning);
  out.tool_calls = std::move(calls);
  return out;
}

// Outputs for every parser, with the spec that parses them: the boundary tests split each at
// every byte and token, and the fuzz test mutates them.
struct OutputCase {
  std::string name;
  ParserSpec spec;
  std::string text;
};

inline std::vector<OutputCase> output_cases() {
  const ParserSpec hermes{.tools = "hermes"};
  const ParserSpec llama3{.tools = "llama3_json"};
  const ParserSpec mistral{.tools = "mistral"};
  const ParserSpec deepseek{.tools = "deepseek_v3"};
  const ParserSpec qwen3{.reasoning = "qwen3", .tools = "hermes"};
  const ParserSpec qwen3_open{.reasoning = "qwen3", .tools = "hermes", .starts_in_reasoning = true};
  const ParserSpec r1{.reasoning = "deepseek_r1", .starts_in_reasoning = true};
  const std::string weather = R"({"name": "get_weather", "arguments": {"city": "Paris"}})";
  const std::string tricky =
      R"({"name": "search", "arguments": {"q": "</tool_call> and } and \" and \\", )"
      R"("nested": {"a": [1, {"b": "]}"}], "c": null}, "n": -1.5e3}})";
  return {
      {"hermes_one", hermes, "<tool_call>\n" + weather + "\n</tool_call>"},
      {"hermes_text_around", hermes,
       "Let me look that up.\n\n<tool_call>\n" + weather + "\n</tool_call>\nDone."},
      {"hermes_two", hermes,
       "<tool_call>\n" + weather + "\n</tool_call>\n<tool_call>\n" + tricky + "\n</tool_call>"},
      {"hermes_tricky_strings", hermes, "<tool_call>\n" + tricky + "\n</tool_call>"},
      {"hermes_truncated_after_json", hermes, "<tool_call>\n" + weather + "\n</tool_"},
      {"hermes_truncated_in_json", hermes, "<tool_call>\n" + weather.substr(0, 30)},
      {"hermes_unknown_tool", hermes,
       "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call> then text"},
      {"hermes_broken_json", hermes,
       "a<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}\n</tool_call>b<tool_call>\n" +
           weather + "\n</tool_call>"},
      {"hermes_string_arguments", hermes,
       "<tool_call>\n{\"name\": \"calc\", \"arguments\": \"{\\\"x\\\": 2}\"}\n</tool_call>"},
      {"hermes_unicode", hermes,
       "héllo 日本 🙂 <tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"日本 "
       "🙂\"}}\n"
       "</tool_call>"},
      {"hermes_xml_body", hermes, "<tool_call>\n<function=f>\n</function>\n</tool_call> tail"},
      {"hermes_marker_prefix_at_end", hermes, "look: <tool_c"},
      {"llama3_bare", llama3, R"({"name": "get_weather", "parameters": {"city": "Paris"}})"},
      {"llama3_python_tag", llama3,
       R"(<|python_tag|>{"name": "search", "parameters": {"q": "x"}}; {"name": "f", "arguments": {}})"},
      {"llama3_content", llama3, "The answer is {42} <|python_tag|> héllo 日本 🙂"},
      {"llama3_not_a_call", llama3, R"(  {"answer": 42})"},
      {"llama3_call_then_text", llama3, R"({"name": "f", "parameters": {}} and then some words)"},
      {"mistral_array", mistral,
       R"(Sure. [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, )"
       R"({"name": "f", "arguments": {"s": "[TOOL_CALLS]"}}])"},
      {"mistral_v11", mistral,
       R"([TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]search[ARGS]{"q": "]}"})"},
      {"mistral_call_id", mistral,
       R"(Ok[TOOL_CALLS]f[CALL_ID]a1B2c3D4e[ARGS]{"x": "日本"}[TOOL_CALLS]f[CALL_ID][ARGS]{})"},
      {"mistral_prose", mistral, "[TOOL_CALLS] is a token [ARGS] too"},
      {"mistral_unknown", mistral, R"([TOOL_CALLS]nope[ARGS]{"x": 1} after)"},
      {"deepseek_v3", deepseek,
       "Calling.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
       "```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function"
       "<｜tool▁sep｜>search\n```json\n{\"q\": \"<｜tool▁call▁end｜>\"}\n```<｜tool▁call▁end｜>"
       "<｜tool▁calls▁end｜>"},
      {"deepseek_v31", deepseek,
       "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"日本\"}"
       "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
      {"deepseek_unknown", deepseek,
       "<｜tool▁call▁begin｜>nope<｜tool▁sep｜>{}<｜tool▁call▁end｜> text"},
      {"qwen3_reasoning_then_call", qwen3,
       "<think>\nThe user wants weather. <tool_call> is how.\n</think>\n\n<tool_call>\n" + weather +
           "\n</tool_call>"},
      {"qwen3_no_reasoning", qwen3, "  Just an answer: héllo 日本 🙂"},
      {"qwen3_empty_reasoning", qwen3, "<think>\n\n</think>\n\nAnswer."},
      {"qwen3_open_prompt", qwen3_open, "Thinking 日本…\n</think>\n\nAnswer 🙂"},
      {"qwen3_unclosed", qwen3, "<think>\nStill thinking when cut </thi"},
      {"deepseek_r1", r1, "Hmm.\n\n</think>\n\nThe answer is 4."},
  };
}

}  // namespace tern::engine::chat::testing
