// The Responses stream encoder's event sequences (text, reasoning then text, text then a function
// call, max_output_tokens, a failure mid-stream), each event numbered in order, and the
// non-streamed Response object with its output items, usage and status.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <regex>
#include <string>
#include <vector>

#include "service/responses/response_object.h"
#include "service/responses/responses_stream_encoder.h"
#include "tests/support/compact_json.h"

namespace tern::service::responses {
namespace {

const api::ResponseMeta kMeta{"resp_1", 1700000000, "m"};

// Item ids are random: "msg_<32 hex>" reads as "msg_X".
std::string without_ids(const std::string& text) {
  static const std::regex kId("(msg|rs)_[0-9a-f]{32}");
  return std::regex_replace(text, kId, "$1_X");
}

struct Event {
  std::string type;
  std::string data;  // the JSON, item ids replaced
};

// Splits a stream into its events, checking each frame's shape, that `event:` repeats the
// data's type, and that sequence_number counts up from `first_sequence` with no gap.
std::vector<Event> events_of(const std::string& stream, int first_sequence = 0) {
  std::vector<Event> events;
  simdjson::dom::parser parser;
  std::size_t at = 0;
  int sequence = first_sequence;
  while (at < stream.size()) {
    const std::size_t end = stream.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string frame = stream.substr(at, end - at);
    at = end + 2;
    const std::size_t newline = frame.find('\n');
    if (!frame.starts_with("event: ") || newline == std::string::npos ||
        frame.compare(newline + 1, 6, "data: ") != 0) {
      ADD_FAILURE() << "not a Responses SSE event: " << frame;
      continue;
    }
    Event event{frame.substr(7, newline - 7), frame.substr(newline + 7)};
    simdjson::dom::element data;
    if (parser.parse(event.data).get(data) != simdjson::SUCCESS) {
      ADD_FAILURE() << "not JSON: " << event.data;
      continue;
    }
    std::string_view type;
    EXPECT_EQ(data["type"].get_string().get(type), simdjson::SUCCESS);
    EXPECT_EQ(type, event.type);
    std::int64_t number = -1;
    EXPECT_EQ(data["sequence_number"].get_int64().get(number), simdjson::SUCCESS);
    EXPECT_EQ(number, sequence++) << event.type;
    event.data = without_ids(event.data);
    events.push_back(std::move(event));
  }
  EXPECT_EQ(at, stream.size()) << "trailing bytes: " << stream.substr(at);
  return events;
}

std::vector<std::string> types_of(const std::vector<Event>& events) {
  std::vector<std::string> types;
  for (const Event& event : events) types.push_back(event.type);
  return types;
}

GenerationEvent output(std::string reasoning, std::string text,
                       std::vector<ToolCallOutput> calls = {}) {
  GenerationEvent event;
  event.reasoning = std::move(reasoning);
  event.text = std::move(text);
  event.tool_calls = std::move(calls);
  return event;
}

// What on_finished saw.
struct Saved {
  int calls = 0;
  std::string id;
  std::string json;
  std::vector<OutputItem> output;
};

ResponsesStreamEncoder encoder_saving_to(Saved& saved, ResponseSettings settings = {}) {
  return ResponsesStreamEncoder(kMeta, std::move(settings),
                                [&saved](const std::string& id, const std::string& json,
                                         const std::vector<OutputItem>& items) {
                                  ++saved.calls;
                                  saved.id = id;
                                  saved.json = json;
                                  saved.output = items;
                                });
}

const std::string kSettingsTail =
    R"("parallel_tool_calls":true,"previous_response_id":null,)"
    R"("reasoning":{"effort":null,"summary":null},"store":true,"temperature":null,)"
    R"("text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,)"
    R"("truncation":"disabled",)";

std::string response_json(std::string_view status, std::string_view output, std::string_view usage,
                          std::string_view incomplete = "null") {
  return R"({"id":"resp_1","object":"response","created_at":1700000000,"status":")" +
         std::string(status) + R"(","background":false,"error":null,"incomplete_details":)" +
         std::string(incomplete) +
         R"(,"instructions":null,"max_output_tokens":null,"model":"m","output":[)" +
         std::string(output) + "]," + kSettingsTail + R"("usage":)" + std::string(usage) +
         R"(,"user":null,"metadata":{}})";
}

const std::string kUsage =
    R"({"input_tokens":5,"input_tokens_details":{"cached_tokens":2},"output_tokens":3,)"
    R"("output_tokens_details":{"reasoning_tokens":0},"total_tokens":8})";

TEST(ResponsesStreamTest, TextInExactEvents) {
  Saved saved;
  auto encoder = encoder_saving_to(saved);
  std::string out;
  encoder.start(out, 5);
  encoder.delta(out, output("", "Hel"));
  encoder.delta(out, output("", "lo"));
  encoder.finish(out, 0, ChoiceFinishReason::stop);
  encoder.done(out, Usage{5, 3, 2});
  const std::vector<Event> events = events_of(out);
  const std::string message_done =
      R"({"type":"message","id":"msg_X","status":"completed","role":"assistant","content":[)"
      R"({"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}]})";
  const std::vector<std::string> expected = {
      R"({"type":"response.created","sequence_number":0,"response":)" +
          response_json("in_progress", "", "null") + "}",
      R"({"type":"response.in_progress","sequence_number":1,"response":)" +
          response_json("in_progress", "", "null") + "}",
      R"({"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":)"
      R"({"type":"message","id":"msg_X","status":"in_progress","role":"assistant",)"
      R"("content":[]}})",
      R"({"type":"response.content_part.added","sequence_number":3,"item_id":"msg_X",)"
      R"("output_index":0,"content_index":0,"part":{"type":"output_text","text":"",)"
      R"("annotations":[],"logprobs":[]}})",
      R"({"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_X",)"
      R"("output_index":0,"content_index":0,"delta":"Hel","logprobs":[]})",
      R"({"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_X",)"
      R"("output_index":0,"content_index":0,"delta":"lo","logprobs":[]})",
      R"({"type":"response.output_text.done","sequence_number":6,"item_id":"msg_X",)"
      R"("output_index":0,"content_index":0,"text":"Hello","logprobs":[]})",
      R"({"type":"response.content_part.done","sequence_number":7,"item_id":"msg_X",)"
      R"("output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hello",)"
      R"("annotations":[],"logprobs":[]}})",
      R"({"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":)" +
          message_done + "}",
      R"({"type":"response.completed","sequence_number":9,"response":)" +
          response_json("completed", message_done, kUsage) + "}",
  };
  ASSERT_EQ(events.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(events[i].data, expected[i]) << i;
  // Stored as the completed event's response, with its output.
  EXPECT_EQ(saved.calls, 1);
  EXPECT_EQ(saved.id, "resp_1");
  EXPECT_EQ(without_ids(saved.json), response_json("completed", message_done, kUsage));
  ASSERT_EQ(saved.output.size(), 1u);
  EXPECT_EQ(saved.output[0].text, "Hello");
}

TEST(ResponsesStreamTest, ReasoningThenText) {
  Saved saved;
  auto encoder = encoder_saving_to(saved);
  std::string out;
  encoder.start(out, 5);
  encoder.delta(out, output("think ", ""));
  encoder.delta(out, output("more", "An"));  // one event may end the reasoning and start text
  encoder.delta(out, output("", "swer"));
  encoder.finish(out, 0, ChoiceFinishReason::stop);
  encoder.done(out, Usage{5, 4, 0});
  const std::vector<Event> events = events_of(out);
  EXPECT_EQ(
      types_of(events),
      (std::vector<std::string>{
          "response.created", "response.in_progress", "response.output_item.added",
          "response.content_part.added", "response.reasoning_text.delta",
          "response.reasoning_text.delta", "response.reasoning_text.done",
          "response.content_part.done", "response.output_item.done", "response.output_item.added",
          "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
          "response.output_text.done", "response.content_part.done", "response.output_item.done",
          "response.completed"}));
  EXPECT_EQ(events[2].data,
            R"({"type":"response.output_item.added","sequence_number":2,"output_index":0,)"
            R"("item":{"type":"reasoning","id":"rs_X","summary":[],"content":[]}})");
  EXPECT_EQ(events[3].data,
            R"({"type":"response.content_part.added","sequence_number":3,"item_id":"rs_X",)"
            R"("output_index":0,"content_index":0,"part":{"type":"reasoning_text","text":""}})");
  EXPECT_EQ(events[5].data,
            R"({"type":"response.reasoning_text.delta","sequence_number":5,"item_id":"rs_X",)"
            R"("output_index":0,"content_index":0,"delta":"more"})");
  EXPECT_EQ(events[6].data,
            R"({"type":"response.reasoning_text.done","sequence_number":6,"item_id":"rs_X",)"
            R"("output_index":0,"content_index":0,"text":"think more"})");
  EXPECT_EQ(events[8].data,
            R"({"type":"response.output_item.done","sequence_number":8,"output_index":0,)"
            R"("item":{"type":"reasoning","id":"rs_X","summary":[],"content":[)"
            R"({"type":"reasoning_text","text":"think more"}]}})");
  EXPECT_NE(events[11].data.find(R"("output_index":1,"content_index":0,"delta":"An")"),
            std::string::npos);
  ASSERT_EQ(saved.output.size(), 2u);
  EXPECT_EQ(saved.output[0].type, OutputItem::Type::reasoning);
  EXPECT_EQ(saved.output[1].text, "Answer");
}

TEST(ResponsesStreamTest, TextThenFunctionCall) {
  Saved saved;
  auto encoder = encoder_saving_to(saved);
  std::string out;
  encoder.start(out, 5);
  encoder.delta(out, output("", "Checking."));
  encoder.delta(out,
                output("", "", {ToolCallOutput{0, "7", "get_weather", R"({"city":"Paris"})"}}));
  encoder.finish(out, 0, ChoiceFinishReason::tool_calls);
  encoder.done(out, Usage{5, 6, 0});
  const std::vector<Event> events = events_of(out);
  EXPECT_EQ(
      types_of(events),
      (std::vector<std::string>{
          "response.created", "response.in_progress", "response.output_item.added",
          "response.content_part.added", "response.output_text.delta", "response.output_text.done",
          "response.content_part.done", "response.output_item.done", "response.output_item.added",
          "response.function_call_arguments.delta", "response.function_call_arguments.done",
          "response.output_item.done", "response.completed"}));
  EXPECT_EQ(events[8].data,
            R"({"type":"response.output_item.added","sequence_number":8,"output_index":1,)"
            R"("item":{"type":"function_call","id":"fc_7","status":"in_progress",)"
            R"("call_id":"call_7","name":"get_weather","arguments":""}})");
  EXPECT_EQ(events[9].data,
            R"({"type":"response.function_call_arguments.delta","sequence_number":9,)"
            R"("item_id":"fc_7","output_index":1,"delta":"{\"city\":\"Paris\"}"})");
  EXPECT_EQ(events[10].data,
            R"({"type":"response.function_call_arguments.done","sequence_number":10,)"
            R"("item_id":"fc_7","output_index":1,"name":"get_weather",)"
            R"("arguments":"{\"city\":\"Paris\"}"})");
  const std::string call_done =
      R"({"type":"function_call","id":"fc_7","status":"completed","call_id":"call_7",)"
      R"("name":"get_weather","arguments":"{\"city\":\"Paris\"}"})";
  EXPECT_EQ(events[11].data,
            R"({"type":"response.output_item.done","sequence_number":11,"output_index":1,)"
            R"("item":)" +
                call_done + "}");
  EXPECT_NE(events[12].data.find(R"("status":"completed")"), std::string::npos);
  EXPECT_NE(events[12].data.find(call_done + "]"), std::string::npos);
  ASSERT_EQ(saved.output.size(), 2u);
  EXPECT_EQ(saved.output[1].call_id, "call_7");
}

TEST(ResponsesStreamTest, LengthIsIncomplete) {
  Saved saved;
  auto encoder = encoder_saving_to(saved);
  std::string out;
  encoder.start(out, 5);
  encoder.delta(out, output("", "cut"));
  encoder.finish(out, 0, ChoiceFinishReason::length);
  encoder.done(out, Usage{5, 3, 2});
  const std::vector<Event> events = events_of(out);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().type, "response.incomplete");
  // The item max_output_tokens cut is incomplete too, as OpenAI reports it (was "completed").
  const std::string message =
      R"({"type":"message","id":"msg_X","status":"incomplete","role":"assistant","content":[)"
      R"({"type":"output_text","text":"cut","annotations":[],"logprobs":[]}]})";
  EXPECT_EQ(events.back().data,
            R"({"type":"response.incomplete","sequence_number":8,"response":)" +
                response_json("incomplete", message, kUsage, R"({"reason":"max_output_tokens"})") +
                "}");
  EXPECT_EQ(saved.calls, 1);  // an incomplete response is kept too
}

TEST(ResponsesStreamTest, FailureMidStream) {
  Saved saved;
  auto encoder = encoder_saving_to(saved);
  std::string out;
  encoder.start(out, 5);
  encoder.delta(out, output("", "par"));
  encoder.error(out, api::server_error("the engine failed"));
  const std::vector<Event> events = events_of(out);
  EXPECT_EQ(
      types_of(events),
      (std::vector<std::string>{
          "response.created", "response.in_progress", "response.output_item.added",
          "response.content_part.added", "response.output_text.delta", "response.output_text.done",
          "response.content_part.done", "response.output_item.done", "response.failed"}));
  // The Responses API's error code for a server failure, and the cut item incomplete (they were
  // chat's "internal_error" and "completed").
  EXPECT_NE(events.back().data.find(R"("status":"failed","background":false,)"
                                    R"("error":{"code":"server_error",)"
                                    R"("message":"the engine failed"})"),
            std::string::npos);
  EXPECT_NE(events.back().data.find(R"({"type":"message","id":"msg_X","status":"incomplete",)"),
            std::string::npos)
      << events.back().data;
  EXPECT_NE(events.back().data.find(R"("usage":null)"), std::string::npos);
  EXPECT_EQ(out.find("[DONE]"), std::string::npos);  // OpenAI's Responses streams have none
  EXPECT_EQ(saved.calls, 0);                         // a failed response is not kept
}

TEST(ResponsesStreamTest, OnlyTheFirstChoiceAndEmptyOutput) {
  Saved saved;
  auto encoder = encoder_saving_to(saved);
  std::string out;
  encoder.start(out, 5);
  GenerationEvent other = output("", "ignored");
  other.index = 1;
  encoder.delta(out, other);
  encoder.finish(out, 1, ChoiceFinishReason::length);
  encoder.finish(out, 0, ChoiceFinishReason::stop);
  encoder.done(out, Usage{5, 0, 0});
  EXPECT_EQ(
      types_of(events_of(out)),
      (std::vector<std::string>{"response.created", "response.in_progress", "response.completed"}));
  EXPECT_TRUE(saved.output.empty());
}

TEST(ResponsesStreamTest, KeepaliveIsAComment) {
  ResponsesStreamEncoder encoder(kMeta, {}, nullptr);
  std::string out;
  encoder.keepalive(out);
  EXPECT_TRUE(out.starts_with(":")) << out;
}

TEST(ResponseObjectTest, EchoesTheSettings) {
  ResponseSettings settings;
  settings.instructions = "Be brief.";
  settings.max_output_tokens = 64;
  settings.temperature = 0.5;
  settings.top_p = 0.25;
  settings.tools_json = R"([{"type":"function","name":"f"}])";
  settings.tool_choice_json = R"("none")";
  settings.metadata_json = R"({"k":"v"})";
  settings.parallel_tool_calls = false;
  settings.reasoning_effort = "high";
  settings.previous_response_id = "resp_0";
  settings.store = false;
  settings.user = "u";
  const std::vector<OutputItem> output;
  const Usage usage{1, 2, 0};
  EXPECT_EQ(
      encode_response(kMeta, settings, ResponseState{ResponseStatus::completed, &output, &usage}),
      R"({"id":"resp_1","object":"response","created_at":1700000000,"status":"completed",)"
      R"("background":false,"error":null,"incomplete_details":null,"instructions":"Be brief.",)"
      R"("max_output_tokens":64,"model":"m","output":[],"parallel_tool_calls":false,)"
      R"("previous_response_id":"resp_0","reasoning":{"effort":"high","summary":null},)"
      R"("store":false,"temperature":0.5,"text":{"format":{"type":"text"}},)"
      R"("tool_choice":"none","tools":[{"type":"function","name":"f"}],"top_p":0.25,)"
      R"("truncation":"disabled","usage":{"input_tokens":1,"input_tokens_details":)"
      R"({"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},)"
      R"("total_tokens":3},"user":"u","metadata":{"k":"v"}})");
}

// Non-streamed: reasoning first, then text and calls in the order written.
TEST(ResponseObjectTest, OutputItemsKeepTheOrderWritten) {
  api::ChoiceOutput choice;
  choice.reasoning = "hmm";
  choice.text = "Before.After.";
  choice.tool_calls = {ToolCallOutput{0, "1", "f", R"({"a":1})"}, ToolCallOutput{1, "2", "g", ""}};
  choice.tool_call_text_offsets = {7, 13};
  choice.finish_reason = ChoiceFinishReason::tool_calls;
  const std::vector<OutputItem> items = output_items(choice);
  ASSERT_EQ(items.size(), 5u);
  EXPECT_EQ(items[0].type, OutputItem::Type::reasoning);
  EXPECT_TRUE(items[0].id.starts_with("rs_"));
  EXPECT_EQ(items[1].type, OutputItem::Type::message);
  EXPECT_TRUE(items[1].id.starts_with("msg_"));
  EXPECT_EQ(items[1].text, "Before.");
  EXPECT_EQ(items[2].id, "fc_1");
  EXPECT_EQ(items[2].call_id, "call_1");
  EXPECT_EQ(items[3].text, "After.");
  EXPECT_EQ(items[4].text, "{}");  // no arguments are an empty object
  EXPECT_EQ(finished_status(ChoiceFinishReason::tool_calls), ResponseStatus::completed);
  EXPECT_EQ(finished_status(ChoiceFinishReason::length), ResponseStatus::incomplete);

  const Usage usage{5, 3, 0};
  const std::string json = without_ids(
      encode_response(kMeta, {}, ResponseState{ResponseStatus::completed, &items, &usage}));
  EXPECT_NE(json.find(R"("output":[{"type":"reasoning","id":"rs_X","summary":[],"content":[)"
                      R"({"type":"reasoning_text","text":"hmm"}]},{"type":"message")"),
            std::string::npos)
      << json;

  // As the next turn's assistant message.
  const api::ChatMessage message = assistant_message(items);
  EXPECT_EQ(message.role, api::ChatRole::assistant);
  EXPECT_EQ(message.reasoning_content, "hmm");
  EXPECT_EQ(message.content, "Before.After.");
  EXPECT_EQ(tern::testing::compact_json(message.tool_calls),
            R"([{"id":"call_1","type":"function","function":{"name":"f","arguments":{"a":1}}},)"
            R"({"id":"call_2","type":"function","function":{"name":"g","arguments":{}}}])");
}

TEST(ResponseObjectTest, TextOnlyWithoutOffsetsAndEmptyOutput) {
  api::ChoiceOutput choice;
  choice.text = "Hi";
  choice.tool_calls = {ToolCallOutput{0, "1", "f", "{}"}};  // offsets unknown: text goes first
  const std::vector<OutputItem> items = output_items(choice);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].text, "Hi");
  EXPECT_EQ(items[1].type, OutputItem::Type::function_call);
  EXPECT_EQ(assistant_message(items).content, "Hi");
  // A turn that only calls tools has no content, as in the chat form.
  EXPECT_FALSE(assistant_message({items[1]}).content.has_value());
  EXPECT_TRUE(output_items(api::ChoiceOutput{}).empty());
  EXPECT_EQ(assistant_message({}).content, "");
}

TEST(ResponseObjectTest, IdsDeletionAndNotFound) {
  const std::string id = make_id("resp");
  EXPECT_TRUE(std::regex_match(id, std::regex("resp_[0-9a-f]{32}"))) << id;
  EXPECT_NE(make_id("resp"), id);
  EXPECT_EQ(response_id("resp-abc"), "resp_abc");
  EXPECT_EQ(encode_deleted("resp_1"),
            R"({"id":"resp_1","object":"response.deleted","deleted":true})");
  const api::ApiError error = response_not_found("resp_9", "previous_response_id");
  EXPECT_EQ(error.status, 404);
  EXPECT_EQ(error.param, "previous_response_id");
  EXPECT_NE(error.message.find("resp_9"), std::string::npos);
  EXPECT_EQ(response_not_found("resp_9").param, "");
}

}  // namespace
}  // namespace tern::service::responses
