// Request parsing: the accepted shapes, and one test per rejection, checking status and param.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "service/api/chat_request.h"
#include "service/api/completion_request.h"
#include "service/api/tokenize_request.h"
#include "service/openai/chat_completion_parser.h"
#include "service/openai/completion_parser.h"
#include "service/openai/tokenize_parser.h"
#include "tests/support/compact_json.h"

namespace tern::service::openai {
namespace {

std::string chat_with(std::string_view fields) {
  return std::string(R"({"messages":[{"role":"user","content":"hi"}])") +
         (fields.empty() ? "" : ",") + std::string(fields) + "}";
}

TEST(ChatRequestTest, ParsesEveryField) {
  const auto request = parse_chat_completion_request(R"({
    "model": "m", "stream": true, "stream_options": {"include_usage": true},
    "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "n": 2, "stop": "END",
    "seed": -3, "presence_penalty": 0.1, "frequency_penalty": -0.1, "logit_bias": {"42": -100},
    "logprobs": true, "top_logprobs": 3, "user": "u", "top_k": 40, "min_p": 0.05,
    "repetition_penalty": 1.1, "min_tokens": 2, "ignore_eos": true,
    "chat_template_kwargs": {"enable_thinking": false},
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
    "tool_choice": "auto", "parallel_tool_calls": false, "reasoning_effort": "low",
    "unknown_field": {"deep": [1, 2, 3]},
    "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "42"}
    ]})");
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->model, "m");
  EXPECT_TRUE(request->stream);
  EXPECT_TRUE(request->include_usage);
  EXPECT_EQ(request->sampling.max_tokens, 7);
  EXPECT_EQ(request->sampling.temperature, 0.5);
  EXPECT_EQ(request->sampling.top_p, 0.9);
  EXPECT_EQ(request->sampling.n, 2);
  EXPECT_EQ(request->sampling.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(request->sampling.seed, -3);
  EXPECT_EQ(request->sampling.logit_bias.size(), 1u);
  EXPECT_EQ(request->sampling.logit_bias[0].first, 42);
  EXPECT_EQ(request->sampling.top_k, 40);
  EXPECT_EQ(request->sampling.min_p, 0.05);
  EXPECT_EQ(request->sampling.repetition_penalty, 1.1);
  EXPECT_EQ(request->sampling.min_tokens, 2);
  EXPECT_TRUE(request->sampling.ignore_eos);
  EXPECT_TRUE(request->logprobs);
  EXPECT_EQ(request->top_logprobs, 3);
  EXPECT_EQ(request->user, "u");
  EXPECT_EQ(tern::testing::compact_json(request->chat_template_kwargs),
            R"({"enable_thinking":false})");
  EXPECT_EQ(request->tool_choice, api::ToolChoice::automatic);
  EXPECT_FALSE(request->parallel_tool_calls);
  EXPECT_EQ(request->reasoning_budget_tokens, api::kLowReasoningEffortTokens);
  EXPECT_EQ(tern::testing::compact_json(request->tools),
            R"([{"type":"function","function":{"name":"f","parameters":{}}}])");
  ASSERT_EQ(request->messages.size(), 4u);
  EXPECT_EQ(request->messages[0].role, api::ChatRole::system);
  EXPECT_EQ(request->messages[1].content, "a\nb");
  EXPECT_FALSE(request->messages[2].content.has_value());
  EXPECT_EQ(tern::testing::compact_json(request->messages[2].tool_calls),
            R"([{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}])");
  EXPECT_EQ(request->messages[3].role, api::ChatRole::tool);
  EXPECT_EQ(request->messages[3].tool_call_id, "c1");
}

TEST(ChatRequestTest, ReasoningEffortIsABudget) {
  const auto budget = [](std::string_view effort) {
    const auto request = parse_chat_completion_request(fmt::format(
        R"({{"messages":[{{"role":"user","content":"hi"}}],"reasoning_effort":"{}"}})", effort));
    EXPECT_TRUE(request.ok()) << effort;
    return request.ok() ? request->reasoning_budget_tokens : std::optional<int>(-1);
  };
  EXPECT_EQ(budget("none"), 0);
  EXPECT_EQ(budget("minimal"), 0);
  EXPECT_EQ(budget("medium"), api::kMediumReasoningEffortTokens);
  EXPECT_EQ(budget("high"), std::nullopt);
  const auto bad = parse_chat_completion_request(
      R"({"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"max"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param, "reasoning_effort");
  EXPECT_TRUE(parse_chat_completion_request(R"({"messages":[{"role":"user","content":"hi"}]})")
                  ->parallel_tool_calls);
}

TEST(ChatRequestTest, NullMeansNotGiven) {
  const auto request = parse_chat_completion_request(
      chat_with(R"("max_tokens":null,"temperature":null,"stop":null,"model":null)"));
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_FALSE(request->sampling.max_tokens);
  EXPECT_FALSE(request->sampling.temperature);
}

TEST(ChatRequestTest, IntegralFloatIsAnInteger) {
  const auto request = parse_chat_completion_request(chat_with(R"("max_tokens":5.0)"));
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->sampling.max_tokens, 5);
}

struct Rejection {
  std::string body;
  std::string param;  // empty: null
  std::string message_part;
};

class ChatRejectionTest : public ::testing::TestWithParam<Rejection> {};

TEST_P(ChatRejectionTest, NamesTheField) {
  const auto request = parse_chat_completion_request(GetParam().body);
  ASSERT_FALSE(request.ok()) << GetParam().body;
  EXPECT_EQ(request.error().status, 400);
  EXPECT_EQ(request.error().type, "invalid_request_error");
  EXPECT_EQ(request.error().param, GetParam().param) << request.error().message;
  EXPECT_NE(request.error().message.find(GetParam().message_part), std::string::npos)
      << request.error().message;
}

std::string nested(int depth) {
  return std::string(R"({"messages":[{"role":"user","content":"x"}],"x":)") +
         std::string(depth, '[') + std::string(depth, ']') + "}";
}

INSTANTIATE_TEST_SUITE_P(
    Errors, ChatRejectionTest,
    ::testing::Values(
        Rejection{"", "", "empty"}, Rejection{"{", "", "not valid JSON"},
        Rejection{"[1]", "", "must be a JSON object"},
        Rejection{R"({"messages":[{"role":"user","content":"x"}],"temperature":NaN})", "",
                  "not valid JSON"},
        Rejection{nested(64), "", "nested deeper than 64"},
        Rejection{"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", "", "UTF-8"},
        Rejection{R"({"model":"m"})", "messages", "Missing required parameter"},
        Rejection{R"({"messages":[]})", "messages", "at least one"},
        Rejection{R"({"messages":"hi"})", "messages", "expected an array"},
        Rejection{R"({"messages":[1]})", "messages[0]", "expected an object"},
        Rejection{R"({"messages":[{"role":"king","content":"x"}]})", "messages[0].role",
                  "Invalid role 'king'"},
        Rejection{R"({"messages":[{"content":"x"}]})", "messages[0].role", "needs a 'role'"},
        Rejection{R"({"messages":[{"role":"user"}]})", "messages[0].content", "needs 'content'"},
        Rejection{R"({"messages":[{"role":"user","content":5}]})", "messages[0].content",
                  "expected a string or array"},
        Rejection{R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
                  "messages[0].content[0].type", "not supported"},
        Rejection{R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})",
                  "messages[0].content[0].text", "needs 'text'"},
        Rejection{chat_with(R"("model":5)"), "model", "expected a string, but got an integer"},
        Rejection{chat_with(R"("stream":"yes")"), "stream", "expected a boolean"},
        Rejection{chat_with(R"("max_tokens":-1)"), "max_tokens", "not in [1, 1048576]"},
        Rejection{chat_with(R"("max_tokens":0)"), "max_tokens", "not in"},
        Rejection{chat_with(R"("max_tokens":99999999999)"), "max_tokens", "not in"},
        Rejection{chat_with(R"("max_tokens":1.5)"), "max_tokens", "expected an integer"},
        Rejection{chat_with(R"("max_completion_tokens":"5")"), "max_completion_tokens",
                  "expected an integer"},
        Rejection{chat_with(R"("temperature":3)"), "temperature", "not in [0, 2]"},
        Rejection{chat_with(R"("temperature":1e400)"), "", "number"},
        Rejection{chat_with(R"("top_p":0)"), "top_p", "(0, 1]"},
        Rejection{chat_with(R"("top_p":1.5)"), "top_p", "not in"},
        Rejection{chat_with(R"("top_k":-2)"), "top_k", "not in"},
        Rejection{chat_with(R"("min_p":2)"), "min_p", "not in"},
        Rejection{chat_with(R"("repetition_penalty":0)"), "repetition_penalty", "> 0"},
        Rejection{chat_with(R"("presence_penalty":-3)"), "presence_penalty", "not in"},
        Rejection{chat_with(R"("frequency_penalty":"a")"), "frequency_penalty",
                  "expected a number"},
        Rejection{chat_with(R"("n":0)"), "n", "not in"},
        Rejection{chat_with(R"("stop":[1])"), "stop[0]", "expected a string"},
        Rejection{chat_with(R"("stop":[""])"), "stop[0]", "must not be empty"},
        Rejection{chat_with(R"("stop":5)"), "stop", "expected a string or array"},
        Rejection{chat_with(R"("logit_bias":{"abc":1})"), "logit_bias.abc", "not a token id"},
        Rejection{chat_with(R"("logit_bias":{"5":101})"), "logit_bias.5", "not in"},
        Rejection{chat_with(R"("logprobs":true,"top_logprobs":21)"), "top_logprobs", "not in"},
        Rejection{chat_with(R"("top_logprobs":2)"), "top_logprobs", "requires 'logprobs'"},
        Rejection{chat_with(R"("seed":"x")"), "seed", "expected an integer"},
        Rejection{chat_with(R"("seed":9223372036854775808)"), "seed", "not in"},
        Rejection{chat_with(R"("seed":18446744073709551615)"), "seed", "not in"},
        Rejection{chat_with(R"("seed":1e19)"), "seed", "not in"},
        Rejection{chat_with(R"("seed":-1e19)"), "seed", "not in"},
        Rejection{chat_with(R"("min_tokens":5,"max_tokens":2)"), "min_tokens", "must not exceed"},
        Rejection{chat_with(R"("stream_options":{"include_usage":1})"),
                  "stream_options.include_usage", "expected a boolean"},
        Rejection{chat_with(R"("tools":{})"), "tools", "expected an array"},
        Rejection{chat_with(R"("tools":[{"type":"function"}])"), "tools[0].function.name",
                  "needs a function"},
        Rejection{chat_with(R"("tool_choice":"maybe")"), "tool_choice", "not none, auto"},
        // Fields that would change the output's meaning, refused until tern implements them.
        Rejection{chat_with(R"("tool_choice":{"type":"function"})"), "tool_choice.function.name",
                  "needs"},
        Rejection{chat_with(R"("response_format":{"type":"xml"})"), "response_format.type",
                  "must be text, json_object or json_schema"},
        Rejection{chat_with(R"("response_format":{"type":"json_schema"})"),
                  "response_format.json_schema", "needs a 'json_schema' object"},
        Rejection{chat_with(R"("response_format":"json")"), "response_format",
                  "expected an object"},
        Rejection{chat_with(R"("guided_json":{"type":"object"},"guided_regex":"a")"),
                  "guided_regex", "'guided_json' and 'guided_regex' both constrain"},
        Rejection{chat_with(R"("guided_choice":[])"), "guided_choice", "at least one choice"},
        Rejection{chat_with(R"("guided_whitespace_pattern":" ")"), "guided_whitespace_pattern",
                  "not supported"},
        Rejection{chat_with(R"("structured_outputs":{"structural_tag":"x"})"),
                  "structured_outputs.structural_tag", "not supported"},
        Rejection{chat_with(R"("best_of":2)"), "best_of", "not supported"},
        Rejection{chat_with(R"("best_of":0)"), "best_of", "not in"},
        Rejection{chat_with(R"("chat_template_kwargs":[])"), "chat_template_kwargs",
                  "expected an object"}));

// As in OpenAI's and vLLM's APIs, whatever order the two come in.
TEST(ChatRequestTest, MaxCompletionTokensWinsOverMaxTokens) {
  for (const char* fields : {R"("max_completion_tokens":7,"max_tokens":3)",
                             R"("max_tokens":3,"max_completion_tokens":7)"}) {
    const auto request = parse_chat_completion_request(chat_with(fields));
    ASSERT_TRUE(request.ok()) << request.error().message;
    EXPECT_EQ(request->sampling.max_tokens, 7) << fields;
  }
  const auto null_completion =
      parse_chat_completion_request(chat_with(R"("max_completion_tokens":null,"max_tokens":3)"));
  ASSERT_TRUE(null_completion.ok());
  EXPECT_EQ(null_completion->sampling.max_tokens, 3);
  // The losing field is still checked.
  EXPECT_EQ(parse_chat_completion_request(chat_with(R"("max_completion_tokens":7,"max_tokens":-1)"))
                .error()
                .param,
            "max_tokens");
}

TEST(ChatRequestTest, LargestSeedIsAccepted) {
  const auto request = parse_chat_completion_request(chat_with(R"("seed":9223372036854775807)"));
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ(request->sampling.seed, std::numeric_limits<std::int64_t>::max());
}

// "required" and a named function force a call: the service constrains the answer to one.
TEST(ChatRequestTest, ToolChoiceCanForceACall) {
  const auto required = parse_chat_completion_request(chat_with(R"("tool_choice":"required")"));
  ASSERT_TRUE(required.ok()) << required.error().message;
  EXPECT_EQ(required->tool_choice, api::ToolChoice::required);
  EXPECT_TRUE(required->required_tool.empty());
  const auto named = parse_chat_completion_request(
      chat_with(R"("tool_choice":{"type":"function","function":{"name":"get_weather"}})"));
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named->tool_choice, api::ToolChoice::required);
  EXPECT_EQ(named->required_tool, "get_weather");
  const auto automatic = parse_chat_completion_request(chat_with(R"("tool_choice":"auto")"));
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(automatic->tool_choice, api::ToolChoice::automatic);
}

// Every API's structured-output field is read into one GrammarSpec, naming the field it came from.
TEST(ChatRequestTest, StructuredOutputFieldsBecomeOneGrammarSpec) {
  using Kind = engine::grammar::GrammarSpec::Kind;
  struct Case {
    const char* fields;
    Kind kind;
    const char* text;
    const char* field;
  };
  for (
      const Case& c : {
          Case{R"("response_format":{"type":"json_object"})", Kind::json_object, "",
               "response_format"},
          Case{
              R"("response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type": "integer"}}})",
              Kind::json_schema, R"({"type":"integer"})", "response_format.json_schema.schema"},
          Case{R"("structured_outputs":{"regex":"[a-z]+"})", Kind::regex, "[a-z]+",
               "structured_outputs.regex"},
          Case{R"("structured_outputs":{"grammar":"root ::= \"a\""})", Kind::gbnf,
               R"(root ::= "a")", "structured_outputs.grammar"},
          Case{R"("structured_outputs":{"json_object":true})", Kind::json_object, "",
               "structured_outputs.json_object"},
          Case{R"("guided_json":"{\"type\":\"string\"}")", Kind::json_schema,
               R"({"type":"string"})", "guided_json"},
          Case{R"("guided_regex":"\\d+","guided_decoding_backend":"xgrammar")", Kind::regex,
               R"(\d+)", "guided_regex"},
          Case{R"("guided_grammar":"root ::= [0-9]")", Kind::gbnf, "root ::= [0-9]",
               "guided_grammar"},
          Case{R"("grammar":"root ::= [0-9]")", Kind::gbnf, "root ::= [0-9]", "grammar"},
          Case{R"("json_schema":{"type":"boolean"})", Kind::json_schema, R"({"type":"boolean"})",
               "json_schema"},
      }) {
    const auto request = parse_chat_completion_request(chat_with(c.fields));
    ASSERT_TRUE(request.ok()) << c.fields << ": " << request.error().message;
    EXPECT_EQ(request->structured_output.kind, c.kind) << c.fields;
    EXPECT_EQ(request->structured_output.text, c.text) << c.fields;
    EXPECT_EQ(request->structured_output.field, c.field) << c.fields;
  }
  const auto choice = parse_chat_completion_request(chat_with(R"("guided_choice":["yes","no"])"));
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->structured_output.kind, Kind::choice);
  EXPECT_EQ(choice->structured_output.choices, (std::vector<std::string>{"yes", "no"}));
  const auto loose = parse_chat_completion_request(chat_with(
      R"("response_format":{"type":"json_schema","json_schema":{"name":"x","strict":false,"schema":{}}})"));
  ASSERT_TRUE(loose.ok());
  EXPECT_FALSE(loose->structured_output.strict);
}

// The values of the unimplemented fields that mean what tern does anyway are accepted.
TEST(ChatRequestTest, HarmlessValuesOfUnimplementedFieldsAreAccepted) {
  for (const char* fields :
       {R"("response_format":{"type":"text"})", R"("response_format":null)", R"("best_of":1)",
        R"("tool_choice":"none")", R"("tool_choice":"auto")", R"("guided_json":null)"}) {
    const auto request = parse_chat_completion_request(chat_with(fields));
    EXPECT_TRUE(request.ok()) << fields << ": " << request.error().message;
  }
}

TEST(ChatRequestTest, SixtyFourLevelsAreAllowed) {
  EXPECT_TRUE(parse_chat_completion_request(nested(63)).ok());
}

TEST(ChatRequestTest, BadEscapeIsRejected) {
  const auto request =
      parse_chat_completion_request(R"({"messages":[{"role":"user","content":"\ud800"}]})");
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.error().status, 400);
}

TEST(CompletionRequestTest, PromptShapes) {
  auto text = parse_completion_request(R"({"prompt":"hello","echo":true,"logprobs":2})");
  ASSERT_TRUE(text.ok());
  ASSERT_EQ(text->prompts.size(), 1u);
  EXPECT_EQ(text->prompts[0].text, "hello");
  EXPECT_TRUE(text->echo);
  EXPECT_EQ(text->logprobs, 2);

  auto texts = parse_completion_request(R"({"prompt":["a","b"]})");
  ASSERT_TRUE(texts.ok());
  EXPECT_EQ(texts->prompts.size(), 2u);

  auto ids = parse_completion_request(R"({"prompt":[1,2,3]})");
  ASSERT_TRUE(ids.ok());
  ASSERT_EQ(ids->prompts.size(), 1u);
  EXPECT_TRUE(ids->prompts[0].is_token_ids);
  EXPECT_EQ(ids->prompts[0].token_ids, (std::vector<std::int32_t>{1, 2, 3}));

  auto batches = parse_completion_request(R"({"prompt":[[1],[2,3]],"n":2})");
  ASSERT_TRUE(batches.ok());
  ASSERT_EQ(batches->prompts.size(), 2u);
  EXPECT_EQ(batches->prompts[1].token_ids, (std::vector<std::int32_t>{2, 3}));
  EXPECT_EQ(batches->sampling.n, 2);
}

TEST(CompletionRequestTest, Rejections) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({})", "prompt"},
      {R"({"prompt":[]})", "prompt"},
      {R"({"prompt":5})", "prompt"},
      {R"({"prompt":[1,"a"]})", "prompt[1]"},
      {R"({"prompt":[1,-1]})", "prompt[1]"},
      {R"({"prompt":["a",1]})", "prompt[1]"},
      {R"({"prompt":[[1],[]]})", "prompt[1]"},
      {R"({"prompt":[{}]})", "prompt[0]"},
      {R"({"prompt":"a","logprobs":21})", "logprobs"},
      {R"({"prompt":"a","logprobs":true})", "logprobs"},
      {R"({"prompt":"a","echo":1})", "echo"},
      {R"({"prompt":"a","max_tokens":-5})", "max_tokens"},
      {R"({"prompt":"a","seed":9223372036854775808})", "seed"},
      {R"({"prompt":"a","suffix":" the end"})", "suffix"},
      {R"({"prompt":"a","best_of":3})", "best_of"},
      {R"({"prompt":"a","response_format":{"type":"yaml"}})", "response_format.type"},
      {R"({"prompt":"a","guided_regex":5})", "guided_regex"},
  };
  for (const auto& [body, param] : cases) {
    const auto request = parse_completion_request(body);
    ASSERT_FALSE(request.ok()) << body;
    EXPECT_EQ(request.error().param, param) << body << ": " << request.error().message;
  }
}

TEST(CompletionRequestTest, UnimplementedFieldsAreNamed) {
  const auto suffix = parse_completion_request(R"({"prompt":"a","suffix":"z"})");
  ASSERT_FALSE(suffix.ok());
  EXPECT_EQ(suffix.error().status, 400);
  EXPECT_NE(suffix.error().message.find("'suffix' is not supported"), std::string::npos)
      << suffix.error().message;
  for (const char* body : {R"({"prompt":"a","suffix":null})", R"({"prompt":"a","suffix":""})",
                           R"({"prompt":"a","best_of":1})"}) {
    const auto request = parse_completion_request(body);
    EXPECT_TRUE(request.ok()) << body << ": " << request.error().message;
  }
  const auto both =
      parse_completion_request(R"({"prompt":"a","max_completion_tokens":9,"max_tokens":2})");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->sampling.max_tokens, 9);
}

TEST(TokenizeRequestTest, PromptOrMessages) {
  auto prompt = parse_tokenize_request(R"({"model":"m","prompt":"hi"})");
  ASSERT_TRUE(prompt.ok());
  EXPECT_FALSE(prompt->is_chat);
  EXPECT_TRUE(prompt->add_special_tokens);
  auto chat = parse_tokenize_request(R"({"messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(chat.ok());
  EXPECT_TRUE(chat->is_chat);
  EXPECT_FALSE(chat->add_special_tokens);
  EXPECT_EQ(parse_tokenize_request(R"({})").error().param, "prompt");
  EXPECT_EQ(parse_tokenize_request(R"({"prompt":"a","messages":[{"role":"user","content":"x"}]})")
                .error()
                .param,
            "messages");
  EXPECT_EQ(parse_tokenize_request(R"({"prompt":1})").error().param, "prompt");
}

TEST(DetokenizeRequestTest, Tokens) {
  auto request = parse_detokenize_request(R"({"tokens":[5,6]})");
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->tokens, (std::vector<std::int32_t>{5, 6}));
  EXPECT_EQ(parse_detokenize_request(R"({})").error().param, "tokens");
  EXPECT_EQ(parse_detokenize_request(R"({"tokens":[1,2.5]})").error().param, "tokens[1]");
}

}  // namespace
}  // namespace tern::service::openai
