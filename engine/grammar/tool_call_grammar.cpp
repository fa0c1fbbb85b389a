#include "engine/grammar/tool_call_grammar.h"

#include <simdjson.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/json_schema_grammar.h"
#include "engine/json_parse_count.h"
#include "engine/json_string.h"

namespace tern::engine::grammar {
namespace {

struct CallFormat {
  std::string_view open;           // before each call
  std::string_view arguments_key;  // "arguments" or "parameters"
  std::string_view close;          // after each call
  std::string_view separator;      // between calls
};

Expected<CallFormat> format_of(std::string_view parser) {
  if (parser == "hermes") return CallFormat{"<tool_call>\n", "arguments", "\n</tool_call>", "\n"};
  if (parser == "llama3_json") return CallFormat{"", "parameters", "", "; "};
  return Error{fmt::format("forcing a tool call is not supported with the '{}' tool-call format "
                           "(its markers are special tokens); it is with hermes and llama3_json",
                           parser.empty() ? "none" : parser),
               ErrorKind::invalid_field, "tool_choice"};
}

Error tools_error(std::string message) {
  return Error{std::move(message), ErrorKind::invalid_field, "tools"};
}

}  // namespace

Expected<std::shared_ptr<const Grammar>> compile_tool_calls(std::string_view tools_json,
                                                            std::string_view only_tool,
                                                            std::string_view parser,
                                                            bool parallel_calls,
                                                            CompileDeadline deadline) {
  auto format = format_of(parser);
  if (!format) return format.error();
  simdjson::dom::parser json;
  const simdjson::padded_string text(tools_json);
  simdjson::dom::array tools;
  count_json_parse();
  if (json.parse(text).get_array().get(tools) != simdjson::SUCCESS) {
    return tools_error("'tools' must be an array of function tools");
  }
  GrammarBuilder builder(deadline);
  std::vector<ExprId> calls;
  std::size_t index = 0;
  for (simdjson::dom::element tool : tools) {
    const std::string where = fmt::format("tools[{}].function", index++);
    std::string_view name;
    if (tool["function"]["name"].get_string().get(name) != simdjson::SUCCESS) {
      return tools_error(where + ".name is missing");
    }
    if (!only_tool.empty() && name != only_tool) continue;
    // Without parameters, the arguments are any object.
    simdjson::dom::element parameters;
    const bool has_parameters =
        tool["function"]["parameters"].get(parameters) == simdjson::SUCCESS &&
        !parameters.is_null();
    auto arguments = has_parameters ? add_json_schema(builder, parameters, {})
                                    : add_json_schema(builder, R"({"type":"object"})", {});
    if (!arguments && arguments.error().message == kCompileTimedOut) return arguments.error();
    if (!arguments) {
      return tools_error(fmt::format("{}.parameters: {}", where, arguments.error().message));
    }
    std::string head = std::string(format->open) + R"({"name": )";
    append_json_string(head, name);
    head += fmt::format(R"(, "{}": )", format->arguments_key);
    calls.push_back(builder.sequence({builder.literal(head), builder.reference(*arguments),
                                      builder.literal("}"), builder.literal(format->close)}));
  }
  if (calls.empty()) {
    if (!only_tool.empty()) {
      return Error{
          fmt::format("'tool_choice' names the function '{}', which is not in 'tools'", only_tool),
          ErrorKind::invalid_field, "tool_choice"};
    }
    return tools_error("forcing a tool call needs at least one function in 'tools'");
  }
  const ExprId call = builder.choice(std::move(calls));
  const ExprId more = builder.repeat(builder.sequence({builder.literal(format->separator), call}),
                                     0, GrammarBuilder::kUnbounded);
  const RuleId root = builder.rule("tool_calls");
  builder.define(root, parallel_calls ? builder.sequence({call, more}) : call);
  return builder.build(root);
}

}  // namespace tern::engine::grammar
