#include "engine/chat/chat_template.h"

#include <exception>
#include <new>
#include <vector>

#include <simdjson.h>

#include "engine/chat/ast.h"
#include "engine/chat/lexer.h"
#include "engine/chat/parser.h"
#include "engine/chat/template_error.h"
#include "engine/chat/value_json.h"

namespace tern::engine::chat {

Expected<ChatTemplate> ChatTemplate::parse(std::string_view source, RenderLimits limits) {
  ChatTemplate compiled;
  try {
    compiled.program_ = parse_template(source);
  } catch (const TemplateError& error) {
    return Error{error.describe()};
  } catch (const std::bad_alloc&) {
    return Error{"chat template: out of memory while parsing"};
  }
  compiled.source_ = std::make_shared<const std::string>(source);
  compiled.limits_ = limits;
  return compiled;
}

Expected<std::string> ChatTemplate::render_json(std::string_view context_json) const {
  Expected<Value> context = parse_json_value(context_json);
  if (!context) return Error{"chat template context: " + context.error().message};
  return render(*context);
}

Expected<std::string> ChatTemplate::render(const Value& context) const {
  if (!context.is_dict()) return Error{"chat template context must be a JSON object"};
  try {
    Interpreter interpreter(limits_);
    return interpreter.render(*program_, context);
  } catch (const TemplateError& error) {
    return Error{error.describe()};
  } catch (const std::bad_alloc&) {
    return Error{"chat template: out of memory while rendering"};
  } catch (const std::exception& error) {
    return Error{std::string("chat template: internal error: ") + error.what()};
  }
}

bool ChatTemplate::reads_variable(std::string_view name) const {
  std::vector<Token> tokens;
  try {
    tokens = tokenize(*source_);
  } catch (const TemplateError&) {
    return false;  // unreachable: the source lexed when it was parsed
  } catch (const std::bad_alloc&) {
    return false;
  }
  auto is_operator = [&](std::size_t at, std::string_view op) {
    return at < tokens.size() && tokens[at].kind == TokenKind::kOperator && tokens[at].text == op;
  };
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind != TokenKind::kName || tokens[i].text != name) continue;
    // `x.name` is an attribute; `name = ...` is an assignment or a keyword argument.
    const bool attribute = i > 0 && is_operator(i - 1, ".");
    if (!attribute && !is_operator(i + 1, "=")) return true;
  }
  return false;
}

std::string chatml_fallback_template() {
  // ChatML has no convention for tools, so they are written as Qwen2.5 and Qwen3 write them: a
  // <tools> block in the system turn, <tool_call> JSON in the assistant turn, and consecutive
  // tool results as <tool_response> blocks in one user turn. Null content (an assistant turn that
  // only calls tools) is empty; arguments that are not an object (a string that was not JSON)
  // are written as given.
  return R"JINJA({%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages and messages[0].role == 'system' and messages[0].content is string %}
{{- messages[0].content + '\n\n' }}
{%- endif %}
{{- '# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>' }}
{%- for tool in tools %}
{{- '\n' + tool | tojson }}
{%- endfor %}
{{- '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- set content = message.content if message.content is string else '' %}
{%- if message.role == 'system' and loop.first and tools %}
{#- already written at the top of the tools block #}
{%- elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}
{{- '<|im_start|>user' }}
{%- endif %}
{{- '\n<tool_response>\n' + content + '\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}
{{- '<|im_end|>\n' }}
{%- endif %}
{%- elif message.role == 'assistant' and message.tool_calls %}
{{- '<|im_start|>assistant' }}
{%- if content %}
{{- '\n' + content }}
{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- set call = tool_call.function if tool_call.function is defined else tool_call %}
{{- '\n<tool_call>\n{"name": "' }}{{ call.name }}{{ '", "arguments": ' }}
{%- if call.arguments is string %}
{{- call.arguments }}
{%- else %}
{{- call.arguments | tojson }}
{%- endif %}
{{- '}\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\n' }}
{%- else %}
{{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\n' }}
{%- endif %})JINJA";
}

Expected<std::string> chat_template_from_tokenizer_config(std::string_view config_json,
                                                          std::string_view name) {
  // On-demand parsing reads only chat_template: tokenizer configs carry integers beyond 64 bits
  // (model_max_length = 1e30) that a full parse rejects.
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(config_json);
  simdjson::ondemand::document document;
  if (auto error = parser.iterate(padded).get(document); error) {
    return Error{std::string("tokenizer_config.json: invalid JSON: ") +
                 simdjson::error_message(error)};
  }
  simdjson::ondemand::value templates;
  if (auto error = document["chat_template"].get(templates); error) {
    return Error{error == simdjson::NO_SUCH_FIELD
                     ? std::string("tokenizer_config.json: no chat_template")
                     : std::string("tokenizer_config.json: invalid JSON: ") +
                           simdjson::error_message(error)};
  }
  simdjson::ondemand::json_type type;
  if (templates.type().get(type) != simdjson::SUCCESS) {
    return Error{"tokenizer_config.json: invalid chat_template"};
  }
  if (type == simdjson::ondemand::json_type::string) {
    std::string_view text;
    if (templates.get_string().get(text) != simdjson::SUCCESS) {
      return Error{"tokenizer_config.json: invalid chat_template string"};
    }
    return std::string(text);
  }
  simdjson::ondemand::array list;
  if (type != simdjson::ondemand::json_type::array ||
      templates.get_array().get(list) != simdjson::SUCCESS) {
    return Error{"tokenizer_config.json: chat_template must be a string or a list"};
  }
  for (auto entry_result : list) {
    simdjson::ondemand::object entry;
    if (entry_result.get_object().get(entry) != simdjson::SUCCESS) {
      return Error{"tokenizer_config.json: chat_template entries must be objects"};
    }
    std::string entry_name;
    std::string entry_template;
    bool has_name = false;
    bool has_template = false;
    for (auto field : entry) {
      std::string_view key;
      std::string_view text;
      if (field.unescaped_key().get(key) != simdjson::SUCCESS) {
        return Error{"tokenizer_config.json: invalid chat_template entry"};
      }
      if (key != "name" && key != "template") continue;
      if (field.value().get_string().get(text) != simdjson::SUCCESS) {
        return Error{"tokenizer_config.json: chat_template entry '" + std::string(key) +
                     "' must be a string"};
      }
      (key == "name" ? entry_name : entry_template) = std::string(text);
      (key == "name" ? has_name : has_template) = true;
    }
    if (!has_name || !has_template) {
      return Error{"tokenizer_config.json: chat_template entries need 'name' and 'template'"};
    }
    if (entry_name == name) return entry_template;
  }
  return Error{"tokenizer_config.json: no chat template named '" + std::string(name) + "'"};
}

}  // namespace tern::engine::chat
