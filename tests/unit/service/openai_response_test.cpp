// Response encoding against exact strings in OpenAI's format.
#include <gtest/gtest.h>

#include "service/api/api_error.h"
#include "service/api/json_writer.h"
#include "service/openai/chat_response.h"
#include "service/openai/completion_response.h"
#include "service/openai/models_response.h"

namespace tern::service::openai {
namespace {

const api::ResponseMeta kMeta{"chatcmpl-1", 1700000000, "m"};
const std::string kChunk =
    R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[)";

TEST(JsonWriterTest, EscapesAndRepairsUtf8) {
  std::string out;
  api::JsonWriter json(out);
  json.begin_object()
      .field("text", std::string_view("a\"b\\c\n\t\x01 é 😀 \xff \xe2\x82"))
      .key("list")
      .begin_array()
      .integer(-5)
      .number(0.1)
      .number(1e300 * 1e300)
      .boolean(true)
      .null()
      .raw(R"({"x":1})")
      .end_array()
      .end_object();
  EXPECT_EQ(out,
            "{\"text\":\"a\\\"b\\\\c\\n\\t\\u0001 é 😀 \xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\","
            "\"list\":[-5,0.1,null,true,null,{\"x\":1}]}");
}

TEST(JsonWriterTest, RejectsOverlongAndSurrogates) {
  std::string out;
  append_json_escaped(out, "\xC0\xAF|\xED\xA0\x80|\xF4\x90\x80\x80");
  EXPECT_EQ(out,
            "\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|"
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(ApiErrorTest, OpenAiShape) {
  EXPECT_EQ(api::encode_error(api::invalid_request("messages", "bad", "invalid_value")),
            R"({"error":{"message":"bad","type":"invalid_request_error","param":"messages",)"
            R"("code":"invalid_value"}})");
  EXPECT_EQ(api::encode_error(api::invalid_api_key()),
            R"({"error":{"message":"Incorrect API key provided","type":"authentication_error",)"
            R"("param":null,"code":"invalid_api_key"}})");
  const api::ApiError context = api::context_length_exceeded(3000, 100, 2048);
  EXPECT_EQ(context.code, "context_length_exceeded");
  EXPECT_NE(context.message.find("maximum context length is 2048 tokens"), std::string::npos);
  EXPECT_NE(context.message.find("3100 tokens (3000 in the messages, 100 in the completion)"),
            std::string::npos);
}

TEST(ChatResponseTest, NonStreamed) {
  std::vector<api::ChoiceOutput> choices(1);
  choices[0].text = "Hi";
  choices[0].finish_reason = ChoiceFinishReason::length;
  EXPECT_EQ(
      encode_chat_completion(kMeta, choices, Usage{5, 1, 4}, false),
      R"({"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m",)"
      R"("choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},)"
      R"("logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":5,)"
      R"("completion_tokens":1,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":4}}})");
}

TEST(ChatResponseTest, Logprobs) {
  std::string out;
  api::JsonWriter json(out);
  write_chat_logprobs(json, {TokenLogprob{"Hi", -0.25, {{"Hi", -0.25}, {"Yo", -1.5}}}});
  EXPECT_EQ(out, R"({"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[)"
                 R"({"token":"Hi","logprob":-0.25,"bytes":[72,105]},)"
                 R"({"token":"Yo","logprob":-1.5,"bytes":[89,111]}]}]})");
}

GenerationEvent text_event(int index, std::string text, std::vector<TokenLogprob> logprobs = {}) {
  GenerationEvent event;
  event.index = index;
  event.text = std::move(text);
  event.logprobs = std::move(logprobs);
  return event;
}

TEST(ChatResponseTest, StreamsReasoningThenContentThenEachToolCallInTwoFragments) {
  ChatChunkEncoder encoder(kMeta, false, false);
  std::string out;
  GenerationEvent event = text_event(0, "Let me look.");
  event.reasoning = "The user wants weather.";
  event.tool_calls.push_back(ToolCallOutput{0, "abc", "get_weather", R"({"city":"Paris"})"});
  encoder.delta(out, event);
  encoder.finish(out, 0, ChoiceFinishReason::tool_calls);
  const std::string end = R"(,"logprobs":null,"finish_reason":null}]})"
                          "\n\n";
  EXPECT_EQ(out, kChunk + R"({"index":0,"delta":{"role":"assistant","content":""})" + end + kChunk +
                     R"({"index":0,"delta":{"reasoning_content":"The user wants weather."})" + end +
                     kChunk + R"({"index":0,"delta":{"content":"Let me look."})" + end + kChunk +
                     R"({"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc",)"
                     R"("type":"function","function":{"name":"get_weather","arguments":""}}]})" +
                     end + kChunk +
                     R"({"index":0,"delta":{"tool_calls":[{"index":0,"function":)"
                     R"({"arguments":"{\"city\":\"Paris\"}"}}]})" +
                     end + kChunk +
                     R"({"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]})"
                     "\n\n");
}

TEST(ChatResponseTest, NonStreamedToolCallsHaveNullContent) {
  std::vector<api::ChoiceOutput> choices(1);
  choices[0].reasoning = "hmm";
  choices[0].tool_calls.push_back(ToolCallOutput{0, "x1", "f", R"({"a":1})"});
  choices[0].finish_reason = ChoiceFinishReason::tool_calls;
  const std::string body = encode_chat_completion(kMeta, choices, Usage{1, 2, 0}, false);
  EXPECT_NE(body.find(R"("message":{"role":"assistant","content":null,"reasoning_content":"hmm",)"
                      R"("tool_calls":[{"id":"call_x1","type":"function","function":)"
                      R"({"name":"f","arguments":"{\"a\":1}"}}]})"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find(R"("finish_reason":"tool_calls")"), std::string::npos) << body;
}

TEST(ChatResponseTest, StreamOrder) {
  ChatChunkEncoder encoder(kMeta, false, false);
  std::string out;
  encoder.delta(out, text_event(0, "Hel"));
  encoder.delta(out, text_event(0, "lo"));
  encoder.finish(out, 0, ChoiceFinishReason::stop);
  encoder.done(out, Usage{1, 2, 0});
  EXPECT_EQ(out, kChunk +
                     R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,)"
                     R"("finish_reason":null}]})"
                     "\n\n" +
                     kChunk +
                     R"({"index":0,"delta":{"content":"Hel"},"logprobs":null,)"
                     R"("finish_reason":null}]})"
                     "\n\n" +
                     kChunk +
                     R"({"index":0,"delta":{"content":"lo"},"logprobs":null,)"
                     R"("finish_reason":null}]})"
                     "\n\n" +
                     kChunk +
                     R"({"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]})"
                     "\n\n"
                     "data: [DONE]\n\n");
}

TEST(ChatResponseTest, UsageChunkWhenRequested) {
  ChatChunkEncoder encoder(kMeta, true, false);
  std::string out;
  encoder.finish(out, 1, ChoiceFinishReason::stop);
  encoder.done(out, Usage{1, 2, 0});
  EXPECT_EQ(out, kChunk +
                     R"({"index":1,"delta":{"role":"assistant","content":""},"logprobs":null,)"
                     R"("finish_reason":null}],"usage":null})"
                     "\n\n" +
                     kChunk +
                     R"({"index":1,"delta":{},"logprobs":null,"finish_reason":"stop"}],)"
                     R"("usage":null})"
                     "\n\n" +
                     kChunk +
                     R"(],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,)"
                     R"("prompt_tokens_details":{"cached_tokens":0}}})"
                     "\n\n"
                     "data: [DONE]\n\n");
}

TEST(CompletionResponseTest, NonStreamedWithLogprobs) {
  std::vector<api::ChoiceOutput> choices(1);
  choices[0].text = "ab";
  choices[0].logprobs = {TokenLogprob{"a", -1, {{"a", -1}}}, TokenLogprob{"b", -2, {{"b", -2}}}};
  EXPECT_EQ(encode_text_completion({"cmpl-1", 5, "m"}, choices, Usage{1, 2, 0}, 1),
            R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[)"
            R"({"index":0,"text":"ab","logprobs":{"tokens":["a","b"],"token_logprobs":[-1,-2],)"
            R"("top_logprobs":[{"a":-1},{"b":-2}],"text_offset":[0,1]},"finish_reason":"stop"}],)"
            R"("usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,)"
            R"("prompt_tokens_details":{"cached_tokens":0}}})");
}

// With echo the text starts with the prompt, and text_offset counts from the start of the text
// (as the streamed chunks do). It used to start at 0.
TEST(CompletionResponseTest, NonStreamedTextOffsetsCountTheEchoedPrompt) {
  std::vector<api::ChoiceOutput> choices(1);
  choices[0].text = "Once ab";
  choices[0].logprobs = {TokenLogprob{"a", -1, {}}, TokenLogprob{"b", -2, {}}};
  choices[0].logprobs_text_offset = 5;
  const std::string body = encode_text_completion({"cmpl-1", 5, "m"}, choices, Usage{1, 2, 0}, 0);
  EXPECT_NE(body.find(R"("text_offset":[5,6])"), std::string::npos) << body;
}

TEST(CompletionResponseTest, StreamTextOffsetsContinue) {
  CompletionChunkEncoder encoder({"cmpl-1", 5, "m"}, false, 0);
  std::string out;
  encoder.delta(out, text_event(0, "ab", {TokenLogprob{"ab", -1, {}}}));
  encoder.delta(out, text_event(0, "c", {TokenLogprob{"c", -1, {}}}));
  encoder.finish(out, 0, ChoiceFinishReason::length);
  encoder.done(out, {});
  const std::string prefix =
      R"(data: {"id":"cmpl-1","object":"text_completion","created":5,"model":"m","choices":[)";
  EXPECT_EQ(out, prefix +
                     R"({"index":0,"text":"ab","logprobs":{"tokens":["ab"],)"
                     R"("token_logprobs":[-1],"top_logprobs":[{}],"text_offset":[0]},)"
                     R"("finish_reason":null}]})"
                     "\n\n" +
                     prefix +
                     R"({"index":0,"text":"c","logprobs":{"tokens":["c"],)"
                     R"("token_logprobs":[-1],"top_logprobs":[{}],"text_offset":[2]},)"
                     R"("finish_reason":null}]})"
                     "\n\n" +
                     prefix +
                     R"({"index":0,"text":"","logprobs":null,"finish_reason":"length"}]})"
                     "\n\n"
                     "data: [DONE]\n\n");
}

TEST(ModelsResponseTest, ListAndObject) {
  const ModelCard card{"demo", "demo", 1700000000, 2048, "llama", "f32", "random text"};
  EXPECT_EQ(encode_model(card),
            R"({"id":"demo","object":"model","created":1700000000,"owned_by":"tern",)"
            R"("root":"demo","max_model_len":2048,"tern":{"context_length":2048,)"
            R"("architecture":"llama","quantization":"f32","note":"random text"}})");
  EXPECT_EQ(encode_model_list({}), R"({"object":"list","data":[]})");
  EXPECT_EQ(encode_tokenize(TokenizeResult{{1, 2}, {"a", "b"}, 10}, true),
            R"({"count":2,"max_model_len":10,"tokens":[1,2],"token_strs":["a","b"]})");
  EXPECT_EQ(encode_detokenize({"hi"}), R"({"prompt":"hi"})");
}

TEST(ResponseIdTest, PrefixAndUniqueness) {
  const std::string a = api::make_response_id("chatcmpl");
  const std::string b = api::make_response_id("chatcmpl");
  EXPECT_EQ(a.rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(a.size(), 9u + 32u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace tern::service::openai
