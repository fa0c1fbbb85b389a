#include "service/responses/responses_stream_encoder.h"

namespace tern::service::responses {
namespace {

// One SSE event, "event: TYPE" and its data line, the JSON object open for the caller's fields
// after `type` and `sequence_number`; the destructor closes it. api::JsonWriter escapes line
// breaks, so one data line always suffices.
class Event {
 public:
  Event(std::string& out, std::string_view type, int& sequence) : out_(out), json_(out) {
    out_ += "event: ";
    out_ += type;
    out_ += "\ndata: ";
    json_.begin_object().field("type", type).field("sequence_number", sequence++);
  }
  ~Event() {
    json_.end_object();
    out_ += "\n\n";
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  api::JsonWriter& json() { return json_; }

 private:
  std::string& out_;
  api::JsonWriter json_;
};

// item_id, output_index and, for a part's events, content_index.
void locate(api::JsonWriter& json, const OutputItem& item, std::size_t output_index,
            bool with_content_index) {
  json.field("item_id", item.id).field("output_index", static_cast<std::int64_t>(output_index));
  if (with_content_index) json.field("content_index", 0);
}

void write_part(api::JsonWriter& json, const OutputItem& item, std::string_view text) {
  json.key("part").begin_object();
  if (item.type == OutputItem::Type::reasoning) {
    json.field("type", "reasoning_text").field("text", text);
  } else {
    json.field("type", "output_text").field("text", text);
    json.key("annotations").begin_array().end_array();
    json.key("logprobs").begin_array().end_array();
  }
  json.end_object();
}

}  // namespace

void ResponsesStreamEncoder::lifecycle(std::string& out, std::string_view type,
                                       const ResponseState& state) {
  Event event(out, type, sequence_);
  write_response(event.json().key("response"), meta_, settings_, state);
}

void ResponsesStreamEncoder::start(std::string& out, int /*prompt_tokens*/) {
  const ResponseState state{ResponseStatus::in_progress, &output_};
  lifecycle(out, "response.created", state);
  lifecycle(out, "response.in_progress", state);
}

void ResponsesStreamEncoder::open(std::string& out, OutputItem::Type type) {
  if (open_ && output_.back().type == type) return;
  close(out);
  OutputItem& item = output_.emplace_back();
  item.type = type;
  item.id = make_id(type == OutputItem::Type::reasoning ? "rs" : "msg");
  item.done = false;
  open_ = true;
  const std::size_t index = output_.size() - 1;
  {
    Event added(out, "response.output_item.added", sequence_);
    added.json().field("output_index", static_cast<std::int64_t>(index)).key("item");
    write_output_item(added.json(), item);
  }
  Event part(out, "response.content_part.added", sequence_);
  locate(part.json(), item, index, true);
  write_part(part.json(), item, "");
}

void ResponsesStreamEncoder::close(std::string& out, bool cut_short) {
  if (!open_) return;
  open_ = false;
  OutputItem& item = output_.back();
  item.done = true;
  item.cut_short = cut_short;
  const std::size_t index = output_.size() - 1;
  const bool reasoning = item.type == OutputItem::Type::reasoning;
  {
    Event text_done(out, reasoning ? "response.reasoning_text.done" : "response.output_text.done",
                    sequence_);
    locate(text_done.json(), item, index, true);
    text_done.json().field("text", item.text);
    if (!reasoning) text_done.json().key("logprobs").begin_array().end_array();
  }
  {
    Event part_done(out, "response.content_part.done", sequence_);
    locate(part_done.json(), item, index, true);
    write_part(part_done.json(), item, item.text);
  }
  Event item_done(out, "response.output_item.done", sequence_);
  item_done.json().field("output_index", static_cast<std::int64_t>(index)).key("item");
  write_output_item(item_done.json(), item);
}

void ResponsesStreamEncoder::add_call(std::string& out, const ToolCallOutput& call) {
  close(out);
  OutputItem& item = output_.emplace_back();
  item.type = OutputItem::Type::function_call;
  item.id = "fc_" + call.id;
  item.call_id = "call_" + call.id;
  item.name = call.name;
  item.text = call.arguments.empty() ? std::string("{}") : call.arguments;
  item.done = false;
  const std::size_t index = output_.size() - 1;
  {
    Event added(out, "response.output_item.added", sequence_);
    added.json().field("output_index", static_cast<std::int64_t>(index)).key("item");
    write_output_item(added.json(), item);
  }
  {
    Event delta(out, "response.function_call_arguments.delta", sequence_);
    locate(delta.json(), item, index, false);
    delta.json().field("delta", item.text);
  }
  {
    Event arguments_done(out, "response.function_call_arguments.done", sequence_);
    locate(arguments_done.json(), item, index, false);
    arguments_done.json().field("name", item.name).field("arguments", item.text);
  }
  item.done = true;
  Event item_done(out, "response.output_item.done", sequence_);
  item_done.json().field("output_index", static_cast<std::int64_t>(index)).key("item");
  write_output_item(item_done.json(), item);
}

void ResponsesStreamEncoder::delta(std::string& out, const GenerationEvent& event) {
  if (event.index != 0) return;  // the Responses API has one answer per request
  const auto text_delta = [&](OutputItem::Type type, std::string_view name,
                              const std::string& text) {
    if (text.empty()) return;
    open(out, type);
    OutputItem& item = output_.back();
    item.text += text;
    Event delta(out, name, sequence_);
    locate(delta.json(), item, output_.size() - 1, true);
    delta.json().field("delta", text);
    if (type == OutputItem::Type::message) delta.json().key("logprobs").begin_array().end_array();
  };
  text_delta(OutputItem::Type::reasoning, "response.reasoning_text.delta", event.reasoning);
  text_delta(OutputItem::Type::message, "response.output_text.delta", event.text);
  for (const ToolCallOutput& call : event.tool_calls) add_call(out, call);
}

void ResponsesStreamEncoder::finish(std::string& out, int index, ChoiceFinishReason reason,
                                    std::string_view /*stop_sequence*/) {
  if (index != 0) return;
  reason_ = reason;
  close(out, reason == ChoiceFinishReason::length);
}

void ResponsesStreamEncoder::done(std::string& out, const Usage& usage) {
  close(out, reason_ == ChoiceFinishReason::length);  // when finish never came
  const ResponseStatus status = finished_status(reason_);
  const ResponseState state{status, &output_, &usage};
  lifecycle(out,
            status == ResponseStatus::incomplete ? "response.incomplete" : "response.completed",
            state);
  if (on_finished_) on_finished_(meta_.id, encode_response(meta_, settings_, state), output_);
}

void ResponsesStreamEncoder::error(std::string& out, const api::ApiError& error) {
  close(out, true);
  lifecycle(out, "response.failed",
            ResponseState{ResponseStatus::failed, &output_, nullptr, &error});
}

}  // namespace tern::service::responses
