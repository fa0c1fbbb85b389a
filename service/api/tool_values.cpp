#include "service/api/tool_values.h"

#include <utility>

#include "engine/chat/value_json.h"

namespace tern::service::api {

using engine::chat::Value;
using engine::chat::ValueDict;
using engine::chat::ValueList;

ApiResult<Value> value_of(const json::element& element, std::string_view param) {
  auto value = engine::chat::from_json(element);
  if (!value) return invalid_request(std::string(param), value.error().message);
  return std::move(*value);
}

Value parsed_arguments(std::string_view arguments_json) {
  auto parsed = engine::chat::parse_json_value(arguments_json);
  if (parsed && parsed->is_dict()) return std::move(*parsed);
  return Value::string(std::string(arguments_json));
}

Value function_call(std::string id, std::string name, Value arguments) {
  ValueDict function;
  function.set("name", Value::string(std::move(name)));
  function.set("arguments", std::move(arguments));
  ValueDict call;
  call.set("id", Value::string(std::move(id)));
  call.set("type", Value::string("function"));
  call.set("function", Value::dict(std::move(function)));
  return Value::dict(std::move(call));
}

namespace {

Value call_with_parsed_arguments(const Value& call) {
  if (!call.is_dict()) return call;
  ValueDict entries;
  for (const auto& [key, value] : call.as_dict()) {
    if (key != "function" || !value.is_dict()) {
      entries.set(key, value);
      continue;
    }
    ValueDict function;
    for (const auto& [name, field] : value.as_dict()) {
      function.set(name, name == "arguments" && field.is_string()
                             ? parsed_arguments(field.as_string())
                             : field);
    }
    entries.set(key, Value::dict(std::move(function)));
  }
  return Value::dict(std::move(entries));
}

}  // namespace

Value with_parsed_arguments(const Value& calls) {
  if (!calls.is_list()) return calls;
  ValueList parsed;
  parsed.reserve(calls.as_list().size());
  for (const Value& call : calls.as_list()) parsed.push_back(call_with_parsed_arguments(call));
  return Value::list(std::move(parsed));
}

Value function_tool(std::string name, Value description, Value parameters) {
  ValueDict function;
  function.set("name", Value::string(std::move(name)));
  if (!description.is_undefined()) function.set("description", std::move(description));
  if (!parameters.is_undefined()) function.set("parameters", std::move(parameters));
  ValueDict tool;
  tool.set("type", Value::string("function"));
  tool.set("function", Value::dict(std::move(function)));
  return Value::dict(std::move(tool));
}

std::vector<std::string> function_names(const Value& tools) {
  std::vector<std::string> names;
  if (!tools.is_list()) return names;
  for (const Value& tool : tools.as_list()) {
    const Value name = tool.item("function").item("name");
    if (name.is_string()) names.push_back(name.as_string());
  }
  return names;
}

bool has_tools(const Value& tools) {
  return tools.is_list() && !tools.as_list().empty();
}

}  // namespace tern::service::api
