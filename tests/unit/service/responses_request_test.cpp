// OpenAI Responses request parsing: every field into the internal chat form and the settings the
// Response echoes, Codex's request shape, and one test per rejection with the field it names.
#include <gtest/gtest.h>

#include <string>

#include "service/responses/responses_request.h"
#include "tests/support/compact_json.h"

namespace tern::service::responses {
namespace {

using api::ChatRole;

std::string input_with(std::string_view fields) {
  return std::string(R"({"input":"hi")") + (fields.empty() ? "" : ",") + std::string(fields) + "}";
}

ResponsesRequest parsed(const std::string& body) {
  auto request = parse_responses_request(body);
  EXPECT_TRUE(request.ok()) << body << ": " << (request.ok() ? "" : request.error().message);
  return request.ok() ? std::move(*request) : ResponsesRequest{};
}

// The status and field of a rejected body.
void expect_rejected(const std::string& body, std::string_view param, std::string_view code = {},
                     int status = 400) {
  const auto request = parse_responses_request(body);
  ASSERT_FALSE(request.ok()) << body;
  EXPECT_EQ(request.error().status, status) << body;
  EXPECT_EQ(request.error().param, param) << body << ": " << request.error().message;
  if (!code.empty()) {
    EXPECT_EQ(request.error().code, code) << body;
  }
}

TEST(ResponsesRequestTest, StringInputIsOneUserMessage) {
  const ResponsesRequest request = parsed(R"({"model":"m","input":"Hello"})");
  EXPECT_EQ(request.model, "m");
  ASSERT_EQ(request.messages.size(), 1u);
  EXPECT_EQ(request.messages[0].role, api::ChatRole::user);
  EXPECT_EQ(request.messages[0].content, "Hello");
  EXPECT_EQ(request.conversation_start(), 0u);
  EXPECT_FALSE(request.stream);
  EXPECT_TRUE(request.settings.store);  // OpenAI's default
  EXPECT_EQ(request.settings.tool_choice_json, R"("auto")");
  EXPECT_EQ(request.settings.tools_json, "[]");
  EXPECT_EQ(request.settings.metadata_json, "{}");
  EXPECT_TRUE(tern::testing::compact_json(request.tools).empty());
}

TEST(ResponsesRequestTest, ParsesEveryField) {
  const ResponsesRequest request = parsed(R"({
    "model": "m", "instructions": "Be brief.", "input": "Weather?",
    "max_output_tokens": 64, "temperature": 0.5, "top_p": 0.9, "stream": true,
    "tools": [{"type": "function", "name": "get_weather", "description": "By city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
               "strict": false}],
    "tool_choice": "none", "reasoning": {"effort": "low", "summary": "auto"},
    "text": {"format": {"type": "text"}, "verbosity": "low"}, "store": false,
    "previous_response_id": "resp_1", "metadata": {"k": "v"}, "parallel_tool_calls": false,
    "user": "u-1", "include": ["reasoning.encrypted_content"], "prompt_cache_key": "abc",
    "service_tier": "auto", "truncation": "disabled", "background": false,
    "safety_identifier": "s", "max_tool_calls": 3
  })");
  ASSERT_EQ(request.messages.size(), 2u);
  EXPECT_EQ(request.messages[0].role, api::ChatRole::system);
  EXPECT_EQ(request.messages[0].content, "Be brief.");
  EXPECT_EQ(request.messages[1].role, api::ChatRole::user);
  EXPECT_EQ(request.conversation_start(), 1u);
  EXPECT_EQ(request.sampling.max_tokens, 64);
  EXPECT_EQ(request.sampling.temperature, 0.5);
  EXPECT_EQ(request.sampling.top_p, 0.9);
  EXPECT_TRUE(request.stream);
  EXPECT_EQ(tern::testing::compact_json(request.tools),
            R"([{"type":"function","function":{"name":"get_weather","description":"By city",)"
            R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])");
  EXPECT_EQ(request.tool_choice, api::ToolChoice::none);
  EXPECT_EQ(request.reasoning_budget_tokens, api::kLowReasoningEffortTokens);
  EXPECT_EQ(request.user, "u-1");
  const ResponseSettings& settings = request.settings;
  EXPECT_EQ(settings.instructions, "Be brief.");
  EXPECT_EQ(settings.max_output_tokens, 64);
  EXPECT_EQ(settings.temperature, 0.5);
  EXPECT_EQ(settings.top_p, 0.9);
  EXPECT_EQ(settings.tools_json,
            R"([{"type":"function","name":"get_weather","description":"By city",)"
            R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}},)"
            R"("strict":false}])");
  EXPECT_EQ(settings.tool_choice_json, R"("none")");
  EXPECT_EQ(settings.reasoning_effort, "low");
  EXPECT_FALSE(settings.store);
  EXPECT_EQ(settings.previous_response_id, "resp_1");
  EXPECT_EQ(settings.metadata_json, R"({"k":"v"})");
  EXPECT_FALSE(settings.parallel_tool_calls);
  EXPECT_EQ(settings.user, "u-1");
}

TEST(ResponsesRequestTest, ReasoningEffortIsABudget) {
  const auto budget = [](std::string_view effort) {
    return parsed(input_with(R"("reasoning":{"effort":")" + std::string(effort) + "\"}"))
        .reasoning_budget_tokens;
  };
  EXPECT_EQ(budget("none"), 0);
  EXPECT_EQ(budget("minimal"), 0);
  EXPECT_EQ(budget("low"), api::kLowReasoningEffortTokens);
  EXPECT_EQ(budget("medium"), api::kMediumReasoningEffortTokens);
  EXPECT_EQ(budget("high"), std::nullopt);
  EXPECT_EQ(parsed(input_with(R"("reasoning":{"summary":"auto"})")).reasoning_budget_tokens,
            std::nullopt);
}

// Items in Codex's order: reasoning, the assistant's text and its calls form one assistant turn;
// outputs are tool messages; a message item may leave its type out.
TEST(ResponsesRequestTest, ItemsBecomeChatTurns) {
  const ResponsesRequest request = parsed(R"({"input": [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]},
    {"role": "user", "content": [{"type": "input_text", "text": "a"},
                                 {"type": "input_text", "text": "b"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "sum"}],
     "content": [{"type": "reasoning_text", "text": "think"}], "encrypted_content": "xyz"},
    {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
     "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
     "arguments": "{\"city\":\"Paris\"}"},
    {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    {"type": "function_call_output", "call_id": "call_2",
     "output": [{"type": "input_text", "text": "noon"}]},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "only a summary"}]},
    {"type": "function_call", "call_id": "call_3", "name": "get_weather", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_3", "output": "rain"},
    {"type": "reasoning", "summary": [], "encrypted_content": "dropped"},
    {"type": "message", "role": "system", "content": "sys"},
    {"type": "message", "role": "user", "content": "thanks"}
  ]})");
  const auto& m = request.messages;
  ASSERT_EQ(m.size(), 9u);
  EXPECT_EQ(m[0].role, api::ChatRole::developer);
  EXPECT_EQ(m[0].content, "rules");
  EXPECT_EQ(m[1].role, api::ChatRole::user);
  EXPECT_EQ(m[1].content, "a\nb");
  EXPECT_EQ(m[2].role, api::ChatRole::assistant);
  EXPECT_EQ(m[2].reasoning_content, "think");
  EXPECT_EQ(m[2].content, "Checking.");
  EXPECT_EQ(tern::testing::compact_json(m[2].tool_calls),
            R"([{"id":"call_1","type":"function","function":{"name":"get_weather",)"
            R"("arguments":{"city":"Paris"}}},{"id":"call_2","type":"function",)"
            R"("function":{"name":"get_time","arguments":{}}}])");
  EXPECT_EQ(m[3].role, api::ChatRole::tool);
  EXPECT_EQ(m[3].tool_call_id, "call_1");
  EXPECT_EQ(m[3].content, "sunny");
  EXPECT_EQ(m[4].tool_call_id, "call_2");
  EXPECT_EQ(m[4].content, "noon");
  EXPECT_EQ(m[5].role, api::ChatRole::assistant);
  EXPECT_EQ(m[5].reasoning_content, "only a summary");
  EXPECT_FALSE(m[5].content.has_value());  // a turn that only calls tools has no content
  EXPECT_EQ(m[6].tool_call_id, "call_3");
  EXPECT_EQ(m[7].role, api::ChatRole::system);
  EXPECT_EQ(m[8].content, "thanks");
}

// A reasoning item with no assistant turn after it is dropped, not attached elsewhere.
TEST(ResponsesRequestTest, ReasoningWithoutAnAnswerIsDropped) {
  const ResponsesRequest request = parsed(R"({"input": [
    {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "x"}]},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"}]})");
  ASSERT_EQ(request.messages.size(), 2u);
  EXPECT_EQ(request.messages[1].content, "hello");
  EXPECT_TRUE(request.messages[1].reasoning_content.empty());
}

// What Codex sends: tools it runs itself or that OpenAI hosts are dropped, not refused.
TEST(ResponsesRequestTest, AcceptsCodexRequests) {
  const ResponsesRequest request = parsed(R"({
    "model": "m", "instructions": "You are Codex.", "stream": true, "store": false,
    "input": [{"type": "message", "role": "user",
               "content": [{"type": "input_text", "text": "ls"}]}],
    "tools": [{"type": "function", "name": "shell", "description": "Runs a command",
               "strict": false, "parameters": {"type": "object", "properties": {}}},
              {"type": "local_shell"}, {"type": "web_search"},
              {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}],
    "tool_choice": "auto", "parallel_tool_calls": false,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "include": ["reasoning.encrypted_content"], "prompt_cache_key": "conv-1",
    "text": {"verbosity": "medium"}
  })");
  EXPECT_EQ(tern::testing::compact_json(request.tools),
            R"([{"type":"function","function":{"name":"shell","description":"Runs a command",)"
            R"("parameters":{"type":"object","properties":{}}}}])");
  EXPECT_EQ(request.settings.tools_json,
            R"([{"type":"function","name":"shell","description":"Runs a command",)"
            R"("strict":false,"parameters":{"type":"object","properties":{}}}])");
  EXPECT_FALSE(request.settings.store);
  EXPECT_EQ(request.reasoning_budget_tokens, api::kMediumReasoningEffortTokens);
}

TEST(ResponsesRequestTest, OnlyNonFunctionToolsMeanNoTools) {
  const ResponsesRequest request = parsed(input_with(R"("tools":[{"type":"web_search"}])"));
  EXPECT_TRUE(tern::testing::compact_json(request.tools).empty());
  EXPECT_EQ(request.settings.tools_json, "[]");
}

TEST(ResponsesRequestTest, FollowUpMayHaveNoNewInput) {
  EXPECT_TRUE(parsed(R"({"input":[],"previous_response_id":"resp_1"})").messages.empty());
}

TEST(ResponsesRequestTest, RejectsMalformedRequests) {
  expect_rejected("[]", "");
  expect_rejected(R"({"model":"m"})", "input", "missing_required_parameter");
  expect_rejected(R"({"input":[]})", "input");
  expect_rejected(R"({"input":5})", "input");
  expect_rejected(R"({"input":[5]})", "input[0]");
  expect_rejected(R"({"input":[{"type":"item_reference","id":"msg_1"}]})", "input[0].type");
  expect_rejected(R"({"input":[{"type":"web_search_call","id":"ws_1"}]})", "input[0].type");
  expect_rejected(R"({"input":[{"role":"tool","content":"x"}]})", "input[0].role");
  expect_rejected(R"({"input":[{"content":"x"}]})", "input[0].role");
  expect_rejected(R"({"input":[{"role":"user"}]})", "input[0].content");
  expect_rejected(R"({"input":[{"role":"user","content":7}]})", "input[0].content");
  expect_rejected(
      R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]})",
      "input[0].content[0].type");
  expect_rejected(R"({"input":[{"role":"user","content":[{"type":"input_text"}]}]})",
                  "input[0].content[0].text");
  expect_rejected(R"({"input":["hi",{"type":"function_call","name":"f","arguments":{}}]})",
                  "input[0]");
  expect_rejected(R"({"input":[{"type":"function_call","name":"f","arguments":{}}]})",
                  "input[0].call_id");
  expect_rejected(R"({"input":[{"type":"function_call","call_id":"c","arguments":{}}]})",
                  "input[0].name");
  expect_rejected(R"({"input":[{"type":"function_call","call_id":"c","name":"f"}]})",
                  "input[0].arguments");
  expect_rejected(R"({"input":[{"type":"function_call_output","call_id":"c"}]})",
                  "input[0].output");
  expect_rejected(R"({"input":[{"type":"function_call_output","output":"x"}]})",
                  "input[0].call_id");
  expect_rejected(R"({"input":[{"type":"reasoning","summary":"x"}]})", "input[0].summary");
  expect_rejected(input_with(R"("instructions":5)"), "instructions");
  expect_rejected(input_with(R"("max_output_tokens":0)"), "max_output_tokens");
  expect_rejected(input_with(R"("temperature":3)"), "temperature");
  expect_rejected(input_with(R"("top_p":0)"), "top_p");
  expect_rejected(input_with(R"("stream":"yes")"), "stream");
  expect_rejected(input_with(R"("store":1)"), "store");
  expect_rejected(input_with(R"("metadata":[])"), "metadata");
  expect_rejected(input_with(R"("include":"x")"), "include");
  expect_rejected(input_with(R"("previous_response_id":5)"), "previous_response_id");
  expect_rejected(input_with(R"("tools":{})"), "tools");
  expect_rejected(input_with(R"("tools":[{"name":"f"}])"), "tools[0].type");
  expect_rejected(input_with(R"("tools":[{"type":"function"}])"), "tools[0].name");
  expect_rejected(input_with(R"("tools":[{"type":"function","name":"f","parameters":5}])"),
                  "tools[0].parameters");
  expect_rejected(input_with(R"("tool_choice":"sometimes")"), "tool_choice", "invalid_value");
  expect_rejected(input_with(R"("reasoning":{"effort":"max"})"), "reasoning.effort");
  expect_rejected(input_with(R"("reasoning":"high")"), "reasoning");
  expect_rejected(input_with(R"("text":{"format":"json"})"), "text.format");
}

// What tern cannot do yet and would change the answer: a 400 naming the field.
TEST(ResponsesRequestTest, RefusesWhatItCannotDoYet) {
  expect_rejected(input_with(R"("tool_choice":{"type":"allowed_tools","tools":[]})"), "tool_choice",
                  "unsupported_parameter");
  expect_rejected(input_with(R"("text":{"format":{"type":"xml"}})"), "text.format.type",
                  "invalid_value");
  expect_rejected(input_with(R"("background":true)"), "background", "unsupported_parameter");
  expect_rejected(input_with(R"("conversation":"conv_1")"), "conversation",
                  "unsupported_parameter");
  expect_rejected(input_with(R"("prompt":{"id":"pmpt_1"})"), "prompt", "unsupported_parameter");
}

}  // namespace
}  // namespace tern::service::responses

namespace tern::service::responses {
namespace {

TEST(ResponsesRequestTest, RequiredOrANamedFunctionForcesACall) {
  const ResponsesRequest required = parsed(input_with(R"("tool_choice":"required")"));
  EXPECT_EQ(required.tool_choice, api::ToolChoice::required);
  EXPECT_EQ(required.settings.tool_choice_json, R"("required")");
  const ResponsesRequest named =
      parsed(input_with(R"("tool_choice":{"type":"function","name":"f"})"));
  EXPECT_EQ(named.tool_choice, api::ToolChoice::required);
  EXPECT_EQ(named.required_tool, "f");
  EXPECT_EQ(named.settings.tool_choice_json, R"({"type":"function","name":"f"})");
}

TEST(ResponsesRequestTest, TextFormatAsksForStructuredOutput) {
  using Kind = engine::grammar::GrammarSpec::Kind;
  const ResponsesRequest schema = parsed(input_with(
      R"("text":{"format":{"type":"json_schema","name":"x","strict":true,"schema":{"type":"string"}}})"));
  EXPECT_EQ(schema.structured_output.kind, Kind::json_schema);
  EXPECT_EQ(schema.structured_output.text, R"({"type":"string"})");
  EXPECT_EQ(schema.structured_output.field, "text.format.schema");
  EXPECT_EQ(schema.settings.text_format_json,
            R"({"type":"json_schema","name":"x","strict":true,"schema":{"type":"string"}})");
  EXPECT_EQ(
      parsed(input_with(R"("text":{"format":{"type":"json_object"}})")).structured_output.kind,
      Kind::json_object);
  EXPECT_FALSE(
      parsed(input_with(R"("text":{"format":{"type":"text"}})")).structured_output.active());
}

}  // namespace
}  // namespace tern::service::responses
