#include "service/responses/response_object.h"

#include <algorithm>

#include <fmt/format.h>

#include "service/api/tool_values.h"

namespace tern::service::responses {
namespace {

std::string_view status_name(ResponseStatus status) {
  switch (status) {
    case ResponseStatus::in_progress:
      return "in_progress";
    case ResponseStatus::completed:
      return "completed";
    case ResponseStatus::incomplete:
      return "incomplete";
    case ResponseStatus::failed:
      return "failed";
  }
  return "completed";
}

void optional_string(api::JsonWriter& json, std::string_view name,
                     const std::optional<std::string>& value) {
  if (value) {
    json.field(name, *value);
  } else {
    json.null_field(name);
  }
}

void optional_number(api::JsonWriter& json, std::string_view name,
                     const std::optional<double>& value) {
  if (value) {
    json.field(name, *value);
  } else {
    json.null_field(name);
  }
}

// input_tokens counts the whole prompt, cached or not, as OpenAI's do; reasoning_tokens are the
// output tokens the reasoning parser read inside reasoning.
void write_response_usage(api::JsonWriter& json, const Usage& usage) {
  json.key("usage").begin_object().field("input_tokens", usage.prompt_tokens);
  json.key("input_tokens_details").begin_object().field("cached_tokens", usage.cached_tokens);
  json.end_object().field("output_tokens", usage.completion_tokens);
  json.key("output_tokens_details").begin_object();
  json.field("reasoning_tokens", usage.reasoning_tokens).end_object();
  json.field("total_tokens", usage.prompt_tokens + usage.completion_tokens).end_object();
}

}  // namespace

std::string make_id(std::string_view prefix) {
  return response_id(api::make_response_id(prefix));
}

std::string response_id(std::string_view made_id) {
  std::string id(made_id);
  if (const std::size_t dash = id.find('-'); dash != std::string::npos) id[dash] = '_';
  return id;
}

std::vector<OutputItem> output_items(const api::ChoiceOutput& choice) {
  std::vector<OutputItem> items;
  if (!choice.reasoning.empty()) {
    items.push_back(OutputItem{OutputItem::Type::reasoning, make_id("rs"), choice.reasoning});
  }
  // Text and calls in the order the model wrote them: a message item per stretch of text.
  std::size_t written = 0;
  const auto message_until = [&](std::size_t end) {
    end = std::min(std::max(end, written), choice.text.size());
    if (end == written) return;
    items.push_back(OutputItem{OutputItem::Type::message, make_id("msg"),
                               choice.text.substr(written, end - written)});
    written = end;
  };
  for (std::size_t i = 0; i < choice.tool_calls.size(); ++i) {
    const ToolCallOutput& call = choice.tool_calls[i];
    message_until(i < choice.tool_call_text_offsets.size() ? choice.tool_call_text_offsets[i]
                                                           : choice.text.size());
    items.push_back(OutputItem{OutputItem::Type::function_call, "fc_" + call.id,
                               call.arguments.empty() ? std::string("{}") : call.arguments,
                               "call_" + call.id, call.name});
  }
  message_until(choice.text.size());
  // As OpenAI reports it: the item max_output_tokens cut is incomplete, like the response.
  if (choice.finish_reason == ChoiceFinishReason::length && !items.empty())
    items.back().cut_short = true;
  return items;
}

ResponseStatus finished_status(ChoiceFinishReason reason) {
  return reason == ChoiceFinishReason::length ? ResponseStatus::incomplete
                                              : ResponseStatus::completed;
}

void write_output_item(api::JsonWriter& json, const OutputItem& item) {
  const std::string_view status =
      !item.done ? "in_progress" : (item.cut_short ? "incomplete" : "completed");
  json.begin_object();
  switch (item.type) {
    case OutputItem::Type::reasoning:
      json.field("type", "reasoning").field("id", item.id);
      json.key("summary").begin_array().end_array();
      json.key("content").begin_array();
      if (item.done) {
        json.begin_object().field("type", "reasoning_text").field("text", item.text).end_object();
      }
      json.end_array();
      break;
    case OutputItem::Type::message:
      json.field("type", "message").field("id", item.id).field("status", status);
      json.field("role", "assistant").key("content").begin_array();
      if (item.done) {
        json.begin_object().field("type", "output_text").field("text", item.text);
        json.key("annotations").begin_array().end_array();
        json.key("logprobs").begin_array().end_array().end_object();
      }
      json.end_array();
      break;
    case OutputItem::Type::function_call:
      json.field("type", "function_call").field("id", item.id).field("status", status);
      json.field("call_id", item.call_id).field("name", item.name);
      json.field("arguments", item.done ? std::string_view(item.text) : std::string_view());
      break;
  }
  json.end_object();
}

void write_response(api::JsonWriter& json, const api::ResponseMeta& meta,
                    const ResponseSettings& settings, const ResponseState& state) {
  json.begin_object()
      .field("id", meta.id)
      .field("object", "response")
      .field("created_at", meta.created)
      .field("status", status_name(state.status))
      .field("background", false);
  if (state.error != nullptr) {
    json.key("error").begin_object();
    // The Responses API's codes: a failure of the server is api::server_error.
    json.field("code", state.error->status >= 500 || state.error->code.empty()
                           ? std::string_view("server_error")
                           : std::string_view(state.error->code));
    json.field("message", state.error->message).end_object();
  } else {
    json.null_field("error");
  }
  if (state.status == ResponseStatus::incomplete) {
    json.key("incomplete_details").begin_object().field("reason", "max_output_tokens").end_object();
  } else {
    json.null_field("incomplete_details");
  }
  optional_string(json, "instructions", settings.instructions);
  if (settings.max_output_tokens) {
    json.field("max_output_tokens", *settings.max_output_tokens);
  } else {
    json.null_field("max_output_tokens");
  }
  json.field("model", meta.model).key("output").begin_array();
  if (state.output != nullptr) {
    for (const OutputItem& item : *state.output) write_output_item(json, item);
  }
  json.end_array();
  json.field("parallel_tool_calls", settings.parallel_tool_calls);
  optional_string(json, "previous_response_id", settings.previous_response_id);
  json.key("reasoning").begin_object();
  optional_string(json, "effort", settings.reasoning_effort);
  json.null_field("summary").end_object();
  json.field("store", settings.store);
  optional_number(json, "temperature", settings.temperature);
  json.key("text").begin_object().key("format").raw(settings.text_format_json).end_object();
  json.key("tool_choice").raw(settings.tool_choice_json).key("tools").raw(settings.tools_json);
  optional_number(json, "top_p", settings.top_p);
  json.field("truncation", "disabled");
  if (state.usage != nullptr) {
    write_response_usage(json, *state.usage);
  } else {
    json.null_field("usage");
  }
  optional_string(json, "user", settings.user);
  json.key("metadata").raw(settings.metadata_json);
  json.end_object();
}

std::string encode_response(const api::ResponseMeta& meta, const ResponseSettings& settings,
                            const ResponseState& state) {
  std::string out;
  api::JsonWriter json(out);
  write_response(json, meta, settings, state);
  return out;
}

api::ChatMessage assistant_message(const std::vector<OutputItem>& output) {
  api::ChatMessage message;
  message.role = api::ChatRole::assistant;
  engine::chat::ValueList calls;
  for (const OutputItem& item : output) {
    switch (item.type) {
      case OutputItem::Type::reasoning:
        message.reasoning_content += item.text;
        break;
      case OutputItem::Type::message:
        message.content = message.content.value_or("") + item.text;
        break;
      case OutputItem::Type::function_call:
        calls.push_back(
            api::function_call(item.call_id, item.name, api::parsed_arguments(item.text)));
        break;
    }
  }
  const bool has_calls = !calls.empty();
  if (has_calls) message.tool_calls = engine::chat::Value::list(std::move(calls));
  // An assistant turn that only calls tools has no content, as in the chat form.
  if (!has_calls && !message.content) message.content = std::string();
  return message;
}

std::string encode_deleted(std::string_view id) {
  std::string out;
  api::JsonWriter json(out);
  json.begin_object().field("id", id).field("object", "response.deleted");
  json.field("deleted", true).end_object();
  return out;
}

api::ApiError response_not_found(std::string_view id, std::string_view param) {
  return api::ApiError{404,
                       fmt::format("Response with id '{}' not found. Stored responses live in "
                                   "one server's memory until they expire.",
                                   id),
                       "invalid_request_error", std::string(param), "response_not_found"};
}

}  // namespace tern::service::responses
