#include "service/anthropic/messages_stream_encoder.h"

#include "service/anthropic/messages_error.h"
#include "service/anthropic/messages_response.h"

namespace tern::service::anthropic {
namespace {

// "event: NAME\ndata: " and a api::JsonWriter for the payload; end_event closes the frame.
// api::JsonWriter escapes line breaks, so one data line always suffices.
void begin_event(std::string& out, std::string_view name) {
  out += "event: ";
  out += name;
  out += "\ndata: ";
}

void end_event(std::string& out) {
  out += "\n\n";
}

void block_delta(std::string& out, int index, std::string_view type, std::string_view field,
                 std::string_view text) {
  begin_event(out, "content_block_delta");
  api::JsonWriter json(out);
  json.begin_object().field("type", "content_block_delta").field("index", index);
  json.key("delta").begin_object().field("type", type).field(field, text).end_object();
  json.end_object();
  end_event(out);
}

}  // namespace

void MessagesStreamEncoder::start(std::string& out, int prompt_tokens) {
  begin_event(out, "message_start");
  api::JsonWriter json(out);
  json.begin_object().field("type", "message_start").key("message").begin_object();
  json.field("id", meta_.id)
      .field("type", "message")
      .field("role", "assistant")
      .field("model", meta_.model);
  json.key("content").begin_array().end_array();
  json.null_field("stop_reason").null_field("stop_sequence");
  // Cache hits are not known yet; message_delta's usage has the final split.
  write_message_usage(json, Usage{prompt_tokens, 0, 0});
  json.end_object().end_object();
  end_event(out);
}

void MessagesStreamEncoder::open(std::string& out, Block block) {
  if (open_ == block) return;
  close(out);
  begin_event(out, "content_block_start");
  api::JsonWriter json(out);
  json.begin_object().field("type", "content_block_start").field("index", next_index_);
  json.key("content_block").begin_object();
  if (block == Block::thinking) {
    json.field("type", "thinking").field("thinking", "").field("signature", "");
  } else {
    json.field("type", "text").field("text", "");
  }
  json.end_object().end_object();
  end_event(out);
  open_ = block;
}

void MessagesStreamEncoder::close(std::string& out) {
  if (open_ == Block::none) return;
  const int index = next_index_++;
  // Anthropic signs each thinking block; tern has nothing to sign, so the signature is empty.
  if (open_ == Block::thinking) block_delta(out, index, "signature_delta", "signature", "");
  begin_event(out, "content_block_stop");
  api::JsonWriter json(out);
  json.begin_object().field("type", "content_block_stop").field("index", index).end_object();
  end_event(out);
  open_ = Block::none;
}

void MessagesStreamEncoder::delta(std::string& out, const GenerationEvent& event) {
  if (event.index != 0) return;  // the Messages API has one answer per request
  if (!event.reasoning.empty()) {
    open(out, Block::thinking);
    block_delta(out, next_index_, "thinking_delta", "thinking", event.reasoning);
  }
  if (!event.text.empty()) {
    open(out, Block::text);
    block_delta(out, next_index_, "text_delta", "text", event.text);
  }
  for (const ToolCallOutput& call : event.tool_calls) {
    close(out);
    const int index = next_index_++;
    begin_event(out, "content_block_start");
    api::JsonWriter start(out);
    start.begin_object().field("type", "content_block_start").field("index", index);
    start.key("content_block").begin_object().field("type", "tool_use");
    start.field("id", tool_use_id(call.id)).field("name", call.name);
    start.key("input").begin_object().end_object().end_object().end_object();
    end_event(out);
    // The call arrives whole, so its input is one fragment.
    block_delta(out, index, "input_json_delta", "partial_json",
                call.arguments.empty() ? std::string_view("{}") : std::string_view(call.arguments));
    begin_event(out, "content_block_stop");
    api::JsonWriter stop(out);
    stop.begin_object().field("type", "content_block_stop").field("index", index).end_object();
    end_event(out);
  }
}

void MessagesStreamEncoder::finish(std::string& out, int index, ChoiceFinishReason reason,
                                   std::string_view stop_sequence) {
  if (index != 0) return;
  close(out);
  reason_ = reason;
  stop_sequence_.assign(stop_sequence);
}

void MessagesStreamEncoder::done(std::string& out, const Usage& usage) {
  close(out);
  begin_event(out, "message_delta");
  api::JsonWriter json(out);
  json.begin_object().field("type", "message_delta").key("delta").begin_object();
  write_stop(json, reason_, stop_sequence_);
  json.end_object();
  write_message_usage(json, usage);
  json.end_object();
  end_event(out);
  begin_event(out, "message_stop");
  out += R"({"type":"message_stop"})";
  end_event(out);
}

void MessagesStreamEncoder::error(std::string& out, const api::ApiError& error) {
  begin_event(out, "error");
  out += anthropic::error_body(error);
  end_event(out);
}

void MessagesStreamEncoder::keepalive(std::string& out) {
  begin_event(out, "ping");
  out += R"({"type":"ping"})";
  end_event(out);
}

}  // namespace tern::service::anthropic
