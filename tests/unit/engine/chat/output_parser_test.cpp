// The output parsers by hand: each format's calls, the ways a call can be wrong, and reasoning.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/chat/output_parser.h"
#include "tests/unit/engine/chat/output_parser_test_support.h"

namespace tern::engine::chat {
namespace {

using testing::expect_output;
using testing::parse_whole;
using testing::ParserSpec;
using testing::same_output;

const ParserSpec hermes{.tools = "hermes"};
const ParserSpec llama3{.tools = "llama3_json"};
const ParserSpec mistral{.tools = "mistral"};
const ParserSpec deepseek{.tools = "deepseek_v3"};

TEST(HermesToolParser, OneCall) {
  EXPECT_TRUE(same_output(expect_output("", "", {{"get_weather", R"({"city": "Paris"})"}}),
                          parse_whole(hermes,
                                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                      "{\"city\": \"Paris\"}}\n</tool_call>")));
}

TEST(HermesToolParser, TextBeforeBetweenAndAfterCalls) {
  // The whitespace after a call only separates it from what follows.
  EXPECT_TRUE(same_output(
      expect_output("Checking both.\nAlso: Done.", "", {{"f", "{}"}, {"calc", R"({"x": 1})"}}),
      parse_whole(hermes,
                  "Checking both.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n"
                  "</tool_call>\nAlso: <tool_call>{\"name\": \"calc\", \"arguments\": "
                  "{\"x\": 1}}</tool_call>\n\nDone.")));
}

// Each call records how much content came before it, so text, call, text keep their order
// (Anthropic's content blocks); the parsers once left it 0.
TEST(OutputParser, CallsKnowWhereTheyStandInTheContent) {
  const std::vector<std::pair<ParserSpec, std::string>> cases = {
      {hermes, R"(ab<tool_call>{"name": "f", "arguments": {}}</tool_call>cd)"
               R"(<tool_call>{"name": "f", "arguments": {}}</tool_call>e)"},
      {mistral, R"(ab[TOOL_CALLS]f[ARGS]{}cd[TOOL_CALLS]f[ARGS]{})"},
      {deepseek,
       "ab<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
       "<｜tool▁calls▁end｜>cd<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{}"
       "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
  };
  for (const auto& [spec, text] : cases) {
    const ParsedOutput out = parse_whole(spec, text);
    ASSERT_EQ(out.tool_calls.size(), 2u) << testing::describe(out);
    EXPECT_EQ(out.content.substr(0, 4), "abcd") << testing::describe(out);
    EXPECT_EQ(out.tool_calls[0].content_before, 2u) << spec.tools;
    EXPECT_EQ(out.tool_calls[1].content_before, 4u) << spec.tools;
  }
}

TEST(HermesToolParser, NestedArgumentsWithMarkersAndBracesInStrings) {
  const std::string arguments =
      R"({"q": "</tool_call> } ] \" \\", "deep": {"a": [1, {"b": "}"}], "c": [[]]}})";
  EXPECT_TRUE(same_output(
      expect_output("", "", {{"search", arguments}}),
      parse_whole(hermes, "<tool_call>\n{\"name\": \"search\", \"arguments\": " + arguments +
                              "}\n</tool_call>")));
}

TEST(HermesToolParser, ArgumentsWrittenAsJsonString) {
  EXPECT_TRUE(same_output(
      expect_output("", "", {{"calc", R"({"x": "日本"})"}}),
      parse_whole(hermes, R"(<tool_call>{"name": "calc", "arguments": " {\"x\": \"日本\"} "})"
                          "</tool_call>")));
}

TEST(HermesToolParser, TruncatedOutputKeepsACompleteCall) {
  const std::string call = R"(<tool_call>
{"name": "f", "arguments": {"x": 1}})";
  EXPECT_TRUE(
      same_output(expect_output("", "", {{"f", R"({"x": 1})"}}), parse_whole(hermes, call)));
  EXPECT_TRUE(same_output(expect_output("", "", {{"f", R"({"x": 1})"}}),
                          parse_whole(hermes, call + "\n</tool_c")));
  const std::string cut = call.substr(0, call.size() - 3);
  EXPECT_TRUE(same_output(expect_output(cut), parse_whole(hermes, cut)));
}

TEST(HermesToolParser, UnknownToolIsContent) {
  const std::string text = R"(<tool_call>{"name": "rm", "arguments": {}}</tool_call>)";
  EXPECT_TRUE(same_output(expect_output(text + " ok"), parse_whole(hermes, text + " ok")));
}

TEST(HermesToolParser, MalformedCallsAreContent) {
  for (const std::string& text : std::vector<std::string>{
           R"(<tool_call>{"name": "f", "arguments": {"x": 1}</tool_call>)",    // bracket missing
           R"(<tool_call>{"name": "f", "arguments": {"x": 1}}}</tool_call>)",  // one too many
           R"(<tool_call>{"name": "f", "arguments": [1]}</tool_call>)",        // not an object
           R"(<tool_call>{"name": "f", "arguments": "nope"}</tool_call>)",
           R"(<tool_call>{"name": "f"}</tool_call>)",  // no arguments
           R"(<tool_call>{"arguments": {}}</tool_call>)",
           R"(<tool_call>{"name": f, "arguments": {}}</tool_call>)",  // not JSON
           "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"\xff\"}}</tool_call>",
           "<tool_call>\n<function=f>\n</function>\n</tool_call>",
       }) {
    EXPECT_TRUE(same_output(expect_output("a" + text + "b"), parse_whole(hermes, "a" + text + "b")))
        << text;
  }
}

TEST(HermesToolParser, BrokenCallDoesNotSwallowTheNextOne) {
  EXPECT_TRUE(same_output(
      expect_output(R"(<tool_call>{"name": "f", "arguments": {</tool_call>)", "", {{"f", "{}"}}),
      parse_whole(hermes, R"(<tool_call>{"name": "f", "arguments": {</tool_call>)"
                          R"(<tool_call>{"name": "f", "arguments": {}}</tool_call>)")));
}

TEST(HermesToolParser, MultiByteContentAndMarkerPrefixAtTheEnd) {
  EXPECT_TRUE(same_output(expect_output("héllo 日本 🙂 <tool_c"),
                          parse_whole(hermes, "héllo 日本 🙂 <tool_c")));
}

TEST(HermesToolParser, ContentStreamsBeforeFinish) {
  OutputParser parser(nullptr, make_tool_call_parser("hermes", {"f"}));
  ParsedOutput out;
  parser.feed("Hello <tool", out);
  EXPECT_EQ(out.content, "Hello ");  // `<tool` may still become a marker
  parser.feed("box> world", out);
  EXPECT_EQ(out.content, "Hello <toolbox> world");
}

TEST(HermesToolParser, EmptyToolListAcceptsNoCall) {
  const ParserSpec none{.tools = "hermes", .tool_names = {}};
  const std::string text = R"(<tool_call>{"name": "f", "arguments": {}}</tool_call>)";
  EXPECT_TRUE(same_output(expect_output(text), parse_whole(none, text)));
}

TEST(Llama3JsonToolParser, CallsWithAndWithoutPythonTag) {
  EXPECT_TRUE(same_output(
      expect_output("", "", {{"get_weather", R"({"city": "Paris"})"}}),
      parse_whole(llama3, R"(  {"name": "get_weather", "parameters": {"city": "Paris"}})")));
  EXPECT_TRUE(same_output(
      expect_output("", "", {{"search", R"({"q": "日本"})"}, {"f", "{}"}}),
      parse_whole(llama3, R"(<|python_tag|>{"name": "search", "parameters": {"q": "日本"}};)"
                          R"( {"name": "f", "arguments": {}})")));
}

TEST(Llama3JsonToolParser, AnyFailureMakesItAllContent) {
  for (const std::string& text : std::vector<std::string>{
           std::string(R"({"answer": 42})"),
           std::string(R"({"name": "f", "parameters": {}} and more)"),
           std::string(R"({"name": "f", "parameters": {}}; {"name": "nope", "parameters": {}})"),
           std::string(R"({"name": "f", "parameters": {"x": )"),  // cut off
           std::string("<|python_tag|>brave_search.call(query=\"x\")"),
       }) {
    EXPECT_TRUE(same_output(expect_output(text), parse_whole(llama3, text))) << text;
  }
}

TEST(Llama3JsonToolParser, PlainTextStreamsAtOnce) {
  OutputParser parser(nullptr, make_tool_call_parser("llama3_json", {"f"}));
  ParsedOutput out;
  parser.feed("  ", out);
  EXPECT_EQ(out.content, "");  // could still be a call
  parser.feed("Hi {there}", out);
  EXPECT_EQ(out.content, "  Hi {there}");
}

TEST(MistralToolParser, ArrayBeforeV11) {
  EXPECT_TRUE(same_output(
      expect_output("Sure. ", "", {{"get_weather", R"({"city": "Paris"})"}, {"f", "{}"}}),
      parse_whole(mistral, R"(Sure. [TOOL_CALLS] [{"name": "get_weather", "arguments": )"
                           R"({"city": "Paris"}}, {"name": "f", "arguments": {}}])")));
}

TEST(MistralToolParser, OneMarkerPerCallFromV11) {
  EXPECT_TRUE(same_output(
      expect_output("", "", {{"get_weather", R"({"city": "Paris"})"}, {"search", R"({"q": "]"})"}}),
      parse_whole(
          mistral,
          R"([TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]search[ARGS]{"q": "]"})")));
}

TEST(MistralToolParser, CallIdBetweenNameAndArguments) {
  EXPECT_TRUE(same_output(expect_output("", "", {{"f", R"({"x": 1})"}, {"calc", "{}"}}),
                          parse_whole(mistral, R"([TOOL_CALLS]f[CALL_ID]a1B2c3D4e[ARGS]{"x": 1})"
                                               R"([TOOL_CALLS]calc[CALL_ID]zz9[ARGS]{})")));
  const std::string no_id = R"([TOOL_CALLS]f[CALL_ID][ARGS]{})";
  EXPECT_TRUE(same_output(expect_output(no_id), parse_whole(mistral, no_id)));
}

TEST(MistralToolParser, FailuresAreContent) {
  for (
      const std::string& text : std::vector<std::string>{
          std::string(R"([TOOL_CALLS]nope[ARGS]{"x": 1})"),
          std::string(
              R"([TOOL_CALLS][{"name": "f", "arguments": {}}, {"name": "nope", "arguments": {}}])"),
          std::string("[TOOL_CALLS] is a token, [ARGS] too"),
          std::string(R"([TOOL_CALLS]f[ARGS]{"x": )"),
      }) {
    EXPECT_TRUE(same_output(expect_output(text), parse_whole(mistral, text))) << text;
  }
}

TEST(DeepseekV3ToolParser, V3Calls) {
  EXPECT_TRUE(same_output(
      expect_output("Calling.", "", {{"get_weather", R"({"city": "Paris"})"}, {"f", "{}"}}),
      parse_whole(deepseek,
                  "Calling.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
                  "get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n"
                  "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```"
                  "<｜tool▁call▁end｜><｜tool▁calls▁end｜>")));
}

TEST(DeepseekV3ToolParser, V31Calls) {
  EXPECT_TRUE(
      same_output(expect_output("", "", {{"search", R"({"q": "<｜tool▁call▁end｜>"})"}}),
                  parse_whole(deepseek,
                              "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>search<｜tool▁sep｜>"
                              "{\"q\": \"<｜tool▁call▁end｜>\"}<｜tool▁call▁end｜>"
                              "<｜tool▁calls▁end｜>")));
}

TEST(DeepseekV3ToolParser, FailuresAreContentAndTruncationKeepsTheCall) {
  const std::string unknown = "<｜tool▁call▁begin｜>nope<｜tool▁sep｜>{}<｜tool▁call▁end｜>";
  EXPECT_TRUE(same_output(expect_output(unknown + "x"), parse_whole(deepseek, unknown + "x")));
  EXPECT_TRUE(same_output(expect_output("", "", {{"f", R"({"a": 1})"}}),
                          parse_whole(deepseek, "<｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"a\": 1}")));
}

TEST(ThinkReasoningParser, ReasoningThenAnswer) {
  const ParserSpec qwen3{.reasoning = "qwen3"};
  EXPECT_TRUE(
      same_output(expect_output("The answer.", "Step 1.\nStep 2."),
                  parse_whole(qwen3, "<think>\nStep 1.\nStep 2.\n</think>\n\nThe answer.")));
  EXPECT_TRUE(same_output(expect_output("Answer.", ""),
                          parse_whole(qwen3, "<think>\n\n</think>\n\nAnswer.")));
  // Without <think> the output is all answer, as written.
  EXPECT_TRUE(same_output(expect_output("  héllo 日本 🙂 </think>"),
                          parse_whole(qwen3, "  héllo 日本 🙂 </think>")));
}

TEST(ThinkReasoningParser, StartsInReasoning) {
  for (const std::string& name : std::vector<std::string>{"qwen3", "deepseek_r1"}) {
    const ParserSpec spec{.reasoning = name, .starts_in_reasoning = true};
    EXPECT_TRUE(same_output(expect_output("Answer 🙂", "Think 日本"),
                            parse_whole(spec, "Think 日本\n</think>\n\nAnswer 🙂")))
        << name;
    // A model that writes the opening marker anyway.
    EXPECT_TRUE(same_output(expect_output("A", "T"), parse_whole(spec, "<think>\nT</think>A")));
    EXPECT_TRUE(same_output(expect_output("A", ""), parse_whole(spec, "</think>A")));
  }
}

TEST(ThinkReasoningParser, UnclosedReasoningIsAllReasoning) {
  const ParserSpec qwen3{.reasoning = "qwen3"};
  EXPECT_TRUE(same_output(expect_output("", "cut off </thi"),
                          parse_whole(qwen3, "<think>\ncut off </thi")));
}

TEST(ThinkReasoningParser, ReportsWhetherInReasoning) {
  OutputParser parser(make_reasoning_parser("qwen3", false), nullptr);
  ParsedOutput out;
  EXPECT_FALSE(parser.in_reasoning());
  parser.feed("<think>", out);
  EXPECT_TRUE(parser.in_reasoning());
  parser.feed("x</think>", out);
  EXPECT_FALSE(parser.in_reasoning());
  EXPECT_TRUE(OutputParser(make_reasoning_parser("deepseek_r1", true), nullptr).in_reasoning());
}

TEST(OutputParser, ReasoningThenToolCall) {
  const ParserSpec spec{.reasoning = "qwen3", .tools = "hermes"};
  // A call written inside reasoning is reasoning, not a call.
  EXPECT_TRUE(same_output(
      expect_output("", "Use <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>.",
                    {{"search", R"({"q": "日本"})"}}),
      parse_whole(spec,
                  "<think>\nUse <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>."
                  "\n</think>\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": "
                  "{\"q\": \"日本\"}}\n</tool_call>")));
}

TEST(OutputParser, PassesThroughWithoutParsers) {
  EXPECT_TRUE(same_output(expect_output("<think>x</think><tool_call>{}</tool_call>"),
                          parse_whole(ParserSpec{}, "<think>x</think><tool_call>{}</tool_call>")));
  const ParserSpec reasoning_only{.reasoning = "qwen3"};
  EXPECT_TRUE(
      same_output(expect_output("<tool_call>{}</tool_call>", "r"),
                  parse_whole(reasoning_only, "<think>r</think><tool_call>{}</tool_call>")));
}

TEST(OutputParser, FactoryNames) {
  for (const std::string& name :
       std::vector<std::string>{"hermes", "llama3_json", "mistral", "deepseek_v3"}) {
    EXPECT_NE(make_tool_call_parser(name, {}), nullptr) << name;
  }
  EXPECT_EQ(make_tool_call_parser("pythonic", {}), nullptr);
  EXPECT_NE(make_reasoning_parser("qwen3", false), nullptr);
  EXPECT_NE(make_reasoning_parser("deepseek_r1", true), nullptr);
  EXPECT_EQ(make_reasoning_parser("granite", false), nullptr);
}

TEST(OutputParser, ParsersForTemplates) {
  EXPECT_EQ(tool_call_parser_for_template("{{- '<tool_call>\\n' }}"), "hermes");
  EXPECT_EQ(tool_call_parser_for_template("{{- '<|python_tag|>' }}"), "llama3_json");
  EXPECT_EQ(tool_call_parser_for_template(
                "<|start_header_id|>{\"name\": function name, \"parameters\": dictionary}"),
            "llama3_json");
  EXPECT_EQ(tool_call_parser_for_template("{{ '[TOOL_CALLS]' }}"), "mistral");
  EXPECT_EQ(tool_call_parser_for_template("{{'<｜tool▁calls▁begin｜>'}}"), "deepseek_v3");
  EXPECT_EQ(tool_call_parser_for_template("{{ messages }}"), "");
  EXPECT_EQ(reasoning_parser_for_template("{{ '<think>\\n' }}"), "qwen3");
  EXPECT_EQ(reasoning_parser_for_template("{{'<｜Assistant｜>'}}{{ c.split('</think>') }}"),
            "deepseek_r1");
  EXPECT_EQ(reasoning_parser_for_template("{{ messages }}"), "");
}

}  // namespace
}  // namespace tern::engine::chat
