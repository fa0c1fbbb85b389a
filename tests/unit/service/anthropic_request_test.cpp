// Anthropic Messages request parsing: every field into the internal chat form, and one test per
// rejection, checking the status and the field it names.
#include <gtest/gtest.h>

#include <string>

#include "service/anthropic/messages_request.h"
#include "tests/support/compact_json.h"

namespace tern::service::anthropic {
namespace {

using api::ChatRole;

std::string messages_with(std::string_view fields) {
  return std::string(R"({"max_tokens":16,"messages":[{"role":"user","content":"hi"}])") +
         (fields.empty() ? "" : ",") + std::string(fields) + "}";
}

// The status and field of a rejected body.
void expect_rejected(const std::string& body, std::string_view param, int status = 400) {
  const auto request = parse_messages_request(body);
  ASSERT_FALSE(request.ok()) << body;
  EXPECT_EQ(request.error().status, status) << body;
  EXPECT_EQ(request.error().param, param) << body << ": " << request.error().message;
}

TEST(AnthropicRequestTest, ParsesEveryField) {
  const auto request = parse_messages_request(R"({
    "messages": [
      {"role": "user", "content": [
        {"type": "text", "text": "weather?", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "in Paris"}]},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "use the tool", "signature": "abc"},
        {"type": "redacted_thinking", "data": "xyz"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
         "input": {"city": "Paris", "days": [1, 2]}},
        {"type": "tool_use", "id": "toolu_2", "name": "noop", "input": {}},
        {"type": "tool_use", "id": "toolu_3", "name": "noop", "input": {}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny",
         "cache_control": {"type": "ephemeral"}},
        {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
         "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"type": "tool_result", "tool_use_id": "toolu_3"},
        {"type": "text", "text": "thanks"}]}
    ],
    "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}},
               {"type": "text", "text": "be kind"}],
    "model": "m", "max_tokens": 64, "stream": true, "stop_sequences": ["END", "STOP"],
    "temperature": 0.5, "top_p": 0.9, "top_k": 40,
    "metadata": {"user_id": "u-1"}, "service_tier": "auto", "container": null,
    "context_management": {"edits": []}, "cache_control": {"type": "ephemeral"},
    "output_config": {"effort": "high"}, "mcp_servers": [],
    "tools": [{"name": "get_weather", "description": "Weather by city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
               "cache_control": {"type": "ephemeral"}},
              {"type": "custom", "name": "noop", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
    "thinking": {"type": "enabled", "budget_tokens": 2048}
  })");
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->model, "m");
  EXPECT_TRUE(request->stream);
  EXPECT_EQ(request->sampling.max_tokens, 64);
  EXPECT_EQ(request->sampling.stop, (std::vector<std::string>{"END", "STOP"}));
  EXPECT_EQ(request->sampling.temperature, 0.5);
  EXPECT_EQ(request->sampling.top_p, 0.9);
  EXPECT_EQ(request->sampling.top_k, 40);
  EXPECT_EQ(request->sampling.n, 1);
  EXPECT_EQ(tern::testing::compact_json(request->tools),
            R"([{"type":"function","function":{"name":"get_weather","description":"Weather by )"
            R"(city","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},)"
            R"({"type":"function","function":{"name":"noop","parameters":{"type":"object"}}}])");
  EXPECT_EQ(request->tool_choice, api::ToolChoice::automatic);
  EXPECT_FALSE(request->parallel_tool_calls);  // disable_parallel_tool_use
  EXPECT_EQ(tern::testing::compact_json(request->chat_template_kwargs),
            R"({"enable_thinking":true})");
  EXPECT_EQ(request->reasoning_budget_tokens, 2048);
  EXPECT_TRUE(request->add_generation_prompt);
  EXPECT_FALSE(request->continue_final_message);

  const auto& messages = request->messages;
  ASSERT_EQ(messages.size(), 7u);
  EXPECT_EQ(messages[0].role, api::ChatRole::system);
  EXPECT_EQ(messages[0].content, "be brief\nbe kind");
  EXPECT_EQ(messages[1].role, api::ChatRole::user);
  EXPECT_EQ(messages[1].content, "weather?\nin Paris");
  EXPECT_EQ(messages[2].role, api::ChatRole::assistant);
  EXPECT_EQ(messages[2].content, "Checking.");
  EXPECT_EQ(messages[2].reasoning_content, "use the tool");
  EXPECT_EQ(tern::testing::compact_json(messages[2].tool_calls),
            R"([{"id":"toolu_1","type":"function","function":{"name":"get_weather",)"
            R"("arguments":{"city":"Paris","days":[1,2]}}},)"
            R"({"id":"toolu_2","type":"function","function":{"name":"noop","arguments":{}}},)"
            R"({"id":"toolu_3","type":"function","function":{"name":"noop","arguments":{}}}])");
  EXPECT_EQ(messages[3].role, api::ChatRole::tool);
  EXPECT_EQ(messages[3].tool_call_id, "toolu_1");
  EXPECT_EQ(messages[3].content, "sunny");
  EXPECT_EQ(messages[4].tool_call_id, "toolu_2");
  EXPECT_EQ(messages[4].content, "a\nb");
  EXPECT_EQ(messages[5].tool_call_id, "toolu_3");
  EXPECT_EQ(messages[5].content, "");
  EXPECT_EQ(messages[6].role, api::ChatRole::user);
  EXPECT_EQ(messages[6].content, "thanks");
}

// A tool_result must answer a tool_use of an earlier assistant turn: one naming no call (or a
// call made only later) was accepted silently and rendered as the answer to a call never made.
TEST(AnthropicRequestTest, ToolResultNamingNoEarlierToolUseIsRefused) {
  const std::string call =
      R"({"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f",)"
      R"("input":{}}]})";
  auto result_of = [](std::string_view id) {
    return std::string(R"({"role":"user","content":[{"type":"text","text":"so"},)") +
           R"({"type":"tool_result","tool_use_id":")" + std::string(id) + R"(","content":"1"}]})";
  };
  auto conversation = [](std::initializer_list<std::string> turns) {
    std::string body = R"({"max_tokens":1,"messages":[{"role":"user","content":"go"})";
    for (const std::string& turn : turns) body += "," + turn;
    return body + "]}";
  };
  expect_rejected(conversation({call, result_of("toolu_2")}), "messages[2].content[1].tool_use_id");
  expect_rejected(conversation({result_of("toolu_1"), call}), "messages[1].content[1].tool_use_id");
  const auto unknown = parse_messages_request(conversation({call, result_of("toolu_x")}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("'toolu_x'"), std::string::npos)
      << unknown.error().message;
  // count_tokens reads the same conversation.
  const auto counted = parse_count_tokens_request(conversation({call, result_of("toolu_2")}));
  ASSERT_FALSE(counted.ok());
  EXPECT_EQ(counted.error().param, "messages[2].content[1].tool_use_id");
  // An answer to a call of any earlier turn is fine.
  const auto answered = parse_messages_request(
      conversation({call, result_of("toolu_1"), R"({"role":"assistant","content":"ok"})",
                    result_of("toolu_1")}));
  EXPECT_TRUE(answered.ok()) << answered.error().message;
}

TEST(AnthropicRequestTest, SystemStringComesFirstWhereverItIsInTheBody) {
  const auto request = parse_messages_request(
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1,"system":"sys"})");
  ASSERT_TRUE(request.ok()) << request.error().message;
  ASSERT_EQ(request->messages.size(), 2u);
  EXPECT_EQ(request->messages[0].role, api::ChatRole::system);
  EXPECT_EQ(request->messages[0].content, "sys");
  EXPECT_EQ(request->messages[1].content, "hi");
  // An empty system prompt adds no message; defaults stay the model's.
  const auto empty = parse_messages_request(messages_with(R"("system":"")"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->messages.size(), 1u);
  EXPECT_FALSE(empty->stream);
  EXPECT_FALSE(empty->sampling.temperature.has_value());
  EXPECT_TRUE(tern::testing::compact_json(empty->chat_template_kwargs).empty());
  EXPECT_FALSE(empty->reasoning_budget_tokens.has_value());
}

TEST(AnthropicRequestTest, AssistantTurnThatOnlyCallsToolsHasNoContent) {
  const auto calls = parse_messages_request(
      R"({"max_tokens":1,"messages":[{"role":"user","content":"go"},)"
      R"({"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},)"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"1"}]}]})");
  ASSERT_TRUE(calls.ok()) << calls.error().message;
  ASSERT_EQ(calls->messages.size(), 3u);
  EXPECT_FALSE(calls->messages[1].content.has_value());
  EXPECT_EQ(tern::testing::compact_json(calls->messages[1].tool_calls),
            R"([{"id":"t","type":"function","function":{"name":"f","arguments":{}}}])");
  EXPECT_EQ(calls->messages[2].role, api::ChatRole::tool);
  EXPECT_TRUE(calls->add_generation_prompt);
}

TEST(AnthropicRequestTest, FinalAssistantMessageIsAPrefill) {
  const auto request =
      parse_messages_request(R"({"max_tokens":1,"messages":[{"role":"user","content":"hi"},)"
                             R"({"role":"assistant","content":"The answer is"}]})");
  ASSERT_TRUE(request.ok());
  EXPECT_TRUE(request->continue_final_message);
  EXPECT_FALSE(request->add_generation_prompt);
}

TEST(AnthropicRequestTest, ThinkingModes) {
  const auto disabled = parse_messages_request(messages_with(R"("thinking":{"type":"disabled"})"));
  ASSERT_TRUE(disabled.ok());
  EXPECT_EQ(tern::testing::compact_json(disabled->chat_template_kwargs),
            R"({"enable_thinking":false})");
  EXPECT_FALSE(disabled->reasoning_budget_tokens.has_value());
  const auto adaptive = parse_messages_request(messages_with(R"("thinking":{"type":"adaptive"})"));
  ASSERT_TRUE(adaptive.ok());
  EXPECT_EQ(tern::testing::compact_json(adaptive->chat_template_kwargs),
            R"({"enable_thinking":true})");
  EXPECT_FALSE(adaptive->reasoning_budget_tokens.has_value());
}

TEST(AnthropicRequestTest, ToolChoiceNonePassesThrough) {
  const auto request = parse_messages_request(messages_with(R"("tool_choice":{"type":"none"})"));
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->tool_choice, api::ToolChoice::none);
}

TEST(AnthropicRequestTest, RejectsBadFieldsNamingThem) {
  expect_rejected(R"({"messages":[{"role":"user","content":"hi"}]})", "max_tokens");
  expect_rejected(R"({"max_tokens":5})", "messages");
  expect_rejected(R"({"max_tokens":5,"messages":[]})", "messages");
  expect_rejected(messages_with(R"("max_tokens":0)"), "max_tokens");
  expect_rejected(messages_with(R"("max_tokens":"5")"), "max_tokens");
  expect_rejected(messages_with(R"("temperature":1.5)"), "temperature");
  expect_rejected(messages_with(R"("top_p":0)"), "top_p");
  expect_rejected(messages_with(R"("top_k":-1)"), "top_k");
  expect_rejected(messages_with(R"("stream":"yes")"), "stream");
  expect_rejected(messages_with(R"("stop_sequences":"END")"), "stop_sequences");
  expect_rejected(messages_with(R"("stop_sequences":["a",""])"), "stop_sequences[1]");
  expect_rejected(messages_with(R"("system":[{"type":"image"}])"), "system[0].type");
  expect_rejected(messages_with(R"("system":7)"), "system");
  expect_rejected(messages_with(R"("tools":{})"), "tools");
  expect_rejected(messages_with(R"("tools":[{"input_schema":{}}])"), "tools[0].name");
  expect_rejected(messages_with(R"("tools":[{"name":"f"}])"), "tools[0].input_schema");
  expect_rejected(messages_with(R"("tools":[{"name":"f","input_schema":{},"description":3}])"),
                  "tools[0].description");
  expect_rejected(messages_with(R"("tools":[{"type":"web_search_20250305","name":"web_search"}])"),
                  "tools[0].type");
  expect_rejected(messages_with(R"("tool_choice":"auto")"), "tool_choice");
  expect_rejected(messages_with(R"("tool_choice":{"type":"tool"})"), "tool_choice.name");
  expect_rejected(messages_with(R"("tool_choice":{"type":"maybe"})"), "tool_choice.type");
  expect_rejected(messages_with(R"("thinking":{"type":"enabled"})"), "thinking.budget_tokens");
  expect_rejected(messages_with(R"("thinking":{"type":"enabled","budget_tokens":0})"),
                  "thinking.budget_tokens");
  expect_rejected(messages_with(R"("thinking":{"type":"on"})"), "thinking.type");
  expect_rejected(messages_with(R"("thinking":true)"), "thinking");
  expect_rejected(messages_with(R"("output_format":{"type":"xml"})"), "output_format.type");
  expect_rejected(messages_with(R"("output_config":{"format":{"type":"xml"}})"),
                  "output_config.format.type");
  expect_rejected(messages_with(R"("mcp_servers":[{"type":"url","url":"x","name":"n"}])"),
                  "mcp_servers");
  expect_rejected(messages_with(R"("model":5)"), "model");
}

TEST(AnthropicRequestTest, RejectsBadMessagesNamingTheBlock) {
  auto with_message = [](std::string_view message) {
    return std::string(R"({"max_tokens":5,"messages":[)") + std::string(message) + "]}";
  };
  expect_rejected(with_message(R"("hi")"), "messages[0]");
  expect_rejected(with_message(R"({"content":"hi"})"), "messages[0].role");
  expect_rejected(with_message(R"({"role":"system","content":"hi"})"), "messages[0].role");
  expect_rejected(with_message(R"({"role":"user"})"), "messages[0].content");
  expect_rejected(with_message(R"({"role":"user","content":5})"), "messages[0].content");
  expect_rejected(with_message(R"({"role":"user","content":[{"text":"a"}]})"),
                  "messages[0].content[0].type");
  expect_rejected(with_message(R"({"role":"user","content":[{"type":"text"}]})"),
                  "messages[0].content[0].text");
  expect_rejected(with_message(R"({"role":"user","content":[{"type":"text","text":"a"},)"
                               R"({"type":"image","source":{"type":"base64","data":"AA"}}]})"),
                  "messages[0].content[1].type");
  expect_rejected(with_message(R"({"role":"user","content":[{"type":"document"}]})"),
                  "messages[0].content[0].type");
  expect_rejected(with_message(R"({"role":"user","content":[{"type":"thinking","thinking":"x"}]})"),
                  "messages[0].content[0].type");
  expect_rejected(with_message(R"({"role":"user","content":[{"type":"tool_result"}]})"),
                  "messages[0].content[0].tool_use_id");
  expect_rejected(with_message(R"({"role":"user","content":[{"type":"tool_result",)"
                               R"("tool_use_id":"t","content":[{"type":"image"}]}]})"),
                  "messages[0].content[0].content[0].type");
  expect_rejected(with_message(R"({"role":"assistant","content":[{"type":"tool_use",)"
                               R"("id":"t","name":"f"}]})"),
                  "messages[0].content[0].input");
  expect_rejected(with_message(R"({"role":"assistant","content":[{"type":"tool_use",)"
                               R"("id":"t","name":"f","input":"{}"}]})"),
                  "messages[0].content[0].input");
  expect_rejected(with_message(R"({"role":"assistant","content":[{"type":"tool_use",)"
                               R"("name":"f","input":{}}]})"),
                  "messages[0].content[0].id");
  expect_rejected(with_message(R"({"role":"assistant","content":[{"type":"tool_result",)"
                               R"("tool_use_id":"t"}]})"),
                  "messages[0].content[0].type");
  expect_rejected(with_message(R"({"role":"assistant","content":[{"type":"thinking"}]})"),
                  "messages[0].content[0].thinking");
  // Not JSON at all, or not an object.
  expect_rejected("{", "");
  expect_rejected("[]", "");
}

// count_tokens rendered a prefill (a final assistant message) as a closed turn with a new
// generation prompt, so its count differed from the same request's usage.
TEST(AnthropicRequestTest, CountTokensContinuesAPrefillAsTheMessageDoes) {
  const auto request = parse_count_tokens_request(
      R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Sure,"}]})");
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_TRUE(request->continue_final_message);
  EXPECT_FALSE(request->add_generation_prompt);
}

TEST(AnthropicRequestTest, CountTokensNeedsNoMaxTokens) {
  const auto request = parse_count_tokens_request(
      R"({"model":"m","system":"s","messages":[{"role":"user","content":"hi"}],)"
      R"("tools":[{"name":"f","input_schema":{"type":"object"}}],)"
      R"("thinking":{"type":"enabled","budget_tokens":1024}})");
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->model, "m");
  EXPECT_TRUE(request->is_chat);
  ASSERT_EQ(request->messages.size(), 2u);
  EXPECT_EQ(request->messages[0].role, api::ChatRole::system);
  EXPECT_EQ(tern::testing::compact_json(request->tools),
            R"([{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}])");
  EXPECT_EQ(tern::testing::compact_json(request->chat_template_kwargs),
            R"({"enable_thinking":true})");
  EXPECT_TRUE(request->add_generation_prompt);
  EXPECT_FALSE(request->add_special_tokens);
  const auto bad = parse_count_tokens_request(R"({"messages":[{"role":"user","content":[1]}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param, "messages[0].content[0]");
}

}  // namespace
}  // namespace tern::service::anthropic

namespace tern::service::anthropic {
namespace {

TEST(AnthropicRequestTest, AnyOrANamedToolForcesACall) {
  const auto any = parse_messages_request(messages_with(R"("tool_choice":{"type":"any"})"));
  ASSERT_TRUE(any.ok()) << any.error().message;
  EXPECT_EQ(any->tool_choice, api::ToolChoice::required);
  EXPECT_TRUE(any->required_tool.empty());
  const auto named =
      parse_messages_request(messages_with(R"("tool_choice":{"type":"tool","name":"f"})"));
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named->tool_choice, api::ToolChoice::required);
  EXPECT_EQ(named->required_tool, "f");
}

TEST(AnthropicRequestTest, OutputFormatAsksForStructuredOutput) {
  for (const char* fields :
       {R"("output_format":{"type":"json_schema","schema":{"type":"integer"}})",
        R"("output_config":{"format":{"type":"json_schema","schema":{"type":"integer"}}})"}) {
    const auto request = parse_messages_request(messages_with(fields));
    ASSERT_TRUE(request.ok()) << fields << ": " << request.error().message;
    EXPECT_EQ(request->structured_output.kind, engine::grammar::GrammarSpec::Kind::json_schema);
    EXPECT_EQ(request->structured_output.text, R"({"type":"integer"})");
  }
}

}  // namespace
}  // namespace tern::service::anthropic
