// Anthropic Messages responses against exact strings: the error shape, the Message object, and
// the streamed event sequences.
#include <gtest/gtest.h>

#include <string>

#include "service/anthropic/messages_error.h"
#include "service/anthropic/messages_response.h"
#include "service/anthropic/messages_stream_encoder.h"

namespace tern::service::anthropic {
namespace {

const api::ResponseMeta kMeta{"msg_1", 1700000000, "m"};

std::string event(std::string_view name, std::string_view data) {
  return "event: " + std::string(name) + "\ndata: " + std::string(data) + "\n\n";
}

const std::string kMessageStart = event(
    "message_start",
    R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",)"
    R"("model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":)"
    R"(5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}})");

std::string block_start(int index, std::string_view block) {
  return event("content_block_start", R"({"type":"content_block_start","index":)" +
                                          std::to_string(index) + R"(,"content_block":)" +
                                          std::string(block) + "}");
}

std::string block_delta(int index, std::string_view delta) {
  return event("content_block_delta", R"({"type":"content_block_delta","index":)" +
                                          std::to_string(index) + R"(,"delta":)" +
                                          std::string(delta) + "}");
}

std::string block_stop(int index) {
  return event("content_block_stop",
               R"({"type":"content_block_stop","index":)" + std::to_string(index) + "}");
}

std::string message_end(std::string_view stop_reason, std::string_view usage) {
  return event("message_delta",
               R"({"type":"message_delta","delta":{"stop_reason":")" + std::string(stop_reason) +
                   R"(","stop_sequence":null},"usage":)" + std::string(usage) + "}") +
         event("message_stop", R"({"type":"message_stop"})");
}

GenerationEvent output(std::string reasoning, std::string text,
                       std::vector<ToolCallOutput> calls = {}) {
  GenerationEvent event;
  event.reasoning = std::move(reasoning);
  event.text = std::move(text);
  event.tool_calls = std::move(calls);
  return event;
}

TEST(AnthropicErrorTest, ShapeAndTypeByStatus) {
  EXPECT_EQ(error_body(api::invalid_request("max_tokens", "Missing required parameter")),
            R"({"type":"error","error":{"type":"invalid_request_error",)"
            R"("message":"max_tokens: Missing required parameter"}})");
  EXPECT_EQ(error_body(api::server_error("boom")),
            R"({"type":"error","error":{"type":"api_error","message":"boom"}})");
  EXPECT_EQ(error_type(400), "invalid_request_error");
  EXPECT_EQ(error_type(401), "authentication_error");
  EXPECT_EQ(error_type(403), "permission_error");
  EXPECT_EQ(error_type(404), "not_found_error");
  EXPECT_EQ(error_type(405), "invalid_request_error");
  EXPECT_EQ(error_type(413), "request_too_large");
  EXPECT_EQ(error_type(415), "invalid_request_error");
  EXPECT_EQ(error_type(429), "rate_limit_error");
  EXPECT_EQ(error_type(500), "api_error");
  EXPECT_EQ(error_type(503), "overloaded_error");
  EXPECT_EQ(error_type(529), "overloaded_error");
  EXPECT_EQ(error_type(504), "api_error");
}

TEST(AnthropicResponseTest, IdsAndStopReasons) {
  EXPECT_EQ(message_id("msg-0123abcd"), "msg_0123abcd");
  EXPECT_EQ(tool_use_id("42"), "toolu_42");
  EXPECT_EQ(stop_reason(ChoiceFinishReason::stop), "end_turn");
  EXPECT_EQ(stop_reason(ChoiceFinishReason::length), "max_tokens");
  EXPECT_EQ(stop_reason(ChoiceFinishReason::tool_calls), "tool_use");
  EXPECT_EQ(stop_reason(ChoiceFinishReason::cancelled), "end_turn");
  EXPECT_EQ(encode_count_tokens(17), R"({"input_tokens":17})");
}

TEST(AnthropicResponseTest, MessageWithThinkingTextAndToolUse) {
  std::vector<api::ChoiceOutput> choices(1);
  choices[0].reasoning = "think";
  choices[0].text = "Let me check.";
  choices[0].tool_calls = {{0, "a1", "get_weather", R"({"city":"Paris"})"}, {1, "a2", "noop", ""}};
  choices[0].finish_reason = ChoiceFinishReason::tool_calls;
  EXPECT_EQ(encode_message(kMeta, choices, Usage{10, 3, 4}),
            R"({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[)"
            R"({"type":"thinking","thinking":"think","signature":""},)"
            R"({"type":"text","text":"Let me check."},)"
            R"({"type":"tool_use","id":"toolu_a1","name":"get_weather","input":{"city":"Paris"}},)"
            R"({"type":"tool_use","id":"toolu_a2","name":"noop","input":{}}],)"
            R"("stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":6,)"
            R"("cache_creation_input_tokens":0,"cache_read_input_tokens":4,"output_tokens":3}})");
}

// Text the model wrote after a call used to be moved before it in a non-streamed message.
TEST(AnthropicResponseTest, TextAfterACallStaysAfterIt) {
  std::vector<api::ChoiceOutput> choices(1);
  choices[0].text = "Let me check.Done.";
  choices[0].tool_calls = {{0, "a1", "f", R"({})"}};
  choices[0].tool_call_text_offsets = {13};
  const std::string body = encode_message(kMeta, choices, Usage{1, 1, 0});
  EXPECT_NE(body.find(R"("content":[{"type":"text","text":"Let me check."},)"
                      R"({"type":"tool_use","id":"toolu_a1","name":"f","input":{}},)"
                      R"({"type":"text","text":"Done."}])"),
            std::string::npos)
      << body;
}

TEST(AnthropicResponseTest, MessageWithTextOnlyOrNothing) {
  std::vector<api::ChoiceOutput> choices(1);
  choices[0].text = "Hi \"there\"";
  choices[0].finish_reason = ChoiceFinishReason::length;
  EXPECT_EQ(encode_message(kMeta, choices, Usage{2, 1, 0}),
            R"({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[)"
            R"({"type":"text","text":"Hi \"there\""}],"stop_reason":"max_tokens",)"
            R"("stop_sequence":null,"usage":{"input_tokens":2,"cache_creation_input_tokens":0,)"
            R"("cache_read_input_tokens":0,"output_tokens":1}})");
  EXPECT_EQ(encode_message(kMeta, {}, Usage{2, 0, 0}),
            R"({"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],)"
            R"("stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2,)"
            R"("cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}})");
}

TEST(AnthropicStreamTest, TextOnly) {
  MessagesStreamEncoder encoder(kMeta);
  std::string out;
  encoder.start(out, 5);
  encoder.delta(out, output("", "Hel"));
  encoder.delta(out, output("", "lo"));
  encoder.delta(out, output("", ""));  // a token that produced no text yet
  encoder.finish(out, 0, ChoiceFinishReason::stop);
  encoder.done(out, Usage{5, 2, 0});
  EXPECT_EQ(out, kMessageStart + block_start(0, R"({"type":"text","text":""})") +
                     block_delta(0, R"({"type":"text_delta","text":"Hel"})") +
                     block_delta(0, R"({"type":"text_delta","text":"lo"})") + block_stop(0) +
                     message_end("end_turn", R"({"input_tokens":5,"cache_creation_input_tokens":0,)"
                                             R"("cache_read_input_tokens":0,"output_tokens":2})"));
}

// A stop string used to come back as end_turn with stop_sequence null.
TEST(AnthropicStreamTest, AStopStringIsReportedAsTheStopSequence) {
  MessagesStreamEncoder encoder(kMeta);
  std::string out;
  encoder.start(out, 5);
  encoder.delta(out, output("", "one, two"));
  encoder.finish(out, 0, ChoiceFinishReason::stop, "three");
  encoder.done(out, Usage{5, 2, 0});
  EXPECT_NE(out.find(R"("delta":{"stop_reason":"stop_sequence","stop_sequence":"three"})"),
            std::string::npos)
      << out;
  std::vector<api::ChoiceOutput> choices(1);
  choices[0].text = "one, two";
  choices[0].stop_sequence = "three";
  const std::string body = encode_message(kMeta, choices, Usage{5, 2, 0});
  EXPECT_NE(body.find(R"("stop_reason":"stop_sequence","stop_sequence":"three")"),
            std::string::npos)
      << body;
}

TEST(AnthropicStreamTest, ThinkingThenText) {
  MessagesStreamEncoder encoder(kMeta);
  std::string out;
  encoder.start(out, 5);
  encoder.delta(out, output("Let me", ""));
  encoder.delta(out, output(" think.", "The"));
  encoder.delta(out, output("", " answer"));
  encoder.finish(out, 0, ChoiceFinishReason::length);
  encoder.done(out, Usage{5, 9, 3});
  EXPECT_EQ(out,
            kMessageStart + block_start(0, R"({"type":"thinking","thinking":"","signature":""})") +
                block_delta(0, R"({"type":"thinking_delta","thinking":"Let me"})") +
                block_delta(0, R"({"type":"thinking_delta","thinking":" think."})") +
                block_delta(0, R"({"type":"signature_delta","signature":""})") + block_stop(0) +
                block_start(1, R"({"type":"text","text":""})") +
                block_delta(1, R"({"type":"text_delta","text":"The"})") +
                block_delta(1, R"({"type":"text_delta","text":" answer"})") + block_stop(1) +
                message_end("max_tokens", R"({"input_tokens":2,"cache_creation_input_tokens":0,)"
                                          R"("cache_read_input_tokens":3,"output_tokens":9})"));
}

TEST(AnthropicStreamTest, TextThenToolUse) {
  MessagesStreamEncoder encoder(kMeta);
  std::string out;
  encoder.start(out, 5);
  encoder.delta(out, output("", "Checking."));
  encoder.delta(out, output("", "", {{0, "c1", "get_weather", R"({"city":"Paris"})"}}));
  GenerationEvent last = output("", "", {{1, "c2", "noop", "{}"}});
  last.kind = GenerationEvent::Kind::finish;
  last.finish_reason = ChoiceFinishReason::tool_calls;
  encoder.delta(out, last);
  encoder.finish(out, 0, ChoiceFinishReason::tool_calls);
  encoder.done(out, Usage{5, 20, 0});
  EXPECT_EQ(
      out,
      kMessageStart + block_start(0, R"({"type":"text","text":""})") +
          block_delta(0, R"({"type":"text_delta","text":"Checking."})") + block_stop(0) +
          block_start(1, R"({"type":"tool_use","id":"toolu_c1","name":"get_weather","input":{}})") +
          block_delta(1, R"({"type":"input_json_delta","partial_json":"{\"city\":\"Paris\"}"})") +
          block_stop(1) +
          block_start(2, R"({"type":"tool_use","id":"toolu_c2","name":"noop","input":{}})") +
          block_delta(2, R"({"type":"input_json_delta","partial_json":"{}"})") + block_stop(2) +
          message_end("tool_use", R"({"input_tokens":5,"cache_creation_input_tokens":0,)"
                                  R"("cache_read_input_tokens":0,"output_tokens":20})"));
}

TEST(AnthropicStreamTest, EmptyAnswerHasNoBlocks) {
  MessagesStreamEncoder encoder(kMeta);
  std::string out;
  encoder.start(out, 5);
  encoder.finish(out, 0, ChoiceFinishReason::stop);
  encoder.done(out, Usage{5, 1, 0});
  EXPECT_EQ(out,
            kMessageStart + message_end("end_turn",
                                        R"({"input_tokens":5,"cache_creation_input_tokens":)"
                                        R"(0,"cache_read_input_tokens":0,"output_tokens":1})"));
}

TEST(AnthropicStreamTest, PingAndErrorMidStream) {
  MessagesStreamEncoder encoder(kMeta);
  std::string out;
  encoder.start(out, 5);
  encoder.keepalive(out);
  encoder.delta(out, output("", "partial"));
  encoder.error(out, api::service_unavailable("The server is shutting down"));
  EXPECT_EQ(out, kMessageStart + event("ping", R"({"type":"ping"})") +
                     block_start(0, R"({"type":"text","text":""})") +
                     block_delta(0, R"({"type":"text_delta","text":"partial"})") +
                     event("error", R"({"type":"error","error":{"type":"overloaded_error",)"
                                    R"("message":"The server is shutting down"}})"));
}

TEST(AnthropicStreamTest, LineBreaksStayInsideOneDataLine) {
  MessagesStreamEncoder encoder(kMeta);
  std::string out;
  encoder.delta(out, output("", "a\nb\r\n"));
  EXPECT_EQ(out, block_start(0, R"({"type":"text","text":""})") +
                     block_delta(0, R"({"type":"text_delta","text":"a\nb\r\n"})"));
}

}  // namespace
}  // namespace tern::service::anthropic
