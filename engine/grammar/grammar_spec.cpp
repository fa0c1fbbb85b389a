#include "engine/grammar/grammar_spec.h"

#include "engine/grammar/choice_grammar.h"
#include "engine/grammar/gbnf_grammar.h"
#include "engine/grammar/json_schema_grammar.h"
#include "engine/grammar/regex_grammar.h"
#include "engine/grammar/tool_call_grammar.h"

namespace tern::engine::grammar {

std::string GrammarSpec::cache_key() const {
  std::string key;
  key += static_cast<char>('0' + static_cast<int>(kind));
  key += strict ? 's' : 'n';
  key += text;
  if (kind == Kind::tool_calls) {
    key += '\0';
    key += tool_parser;
    key += '\0';
    key += tool_name;
    key += parallel_tool_calls ? '\1' : '\0';
  }
  for (const std::string& choice : choices) {
    key += '\0';
    key += std::to_string(choice.size());
    key += ':';
    key += choice;
  }
  return key;
}

Expected<std::shared_ptr<const Grammar>> compile_grammar(const GrammarSpec& spec,
                                                         CompileDeadline deadline) {
  Expected<std::shared_ptr<const Grammar>> compiled = Error{"no grammar was asked for"};
  switch (spec.kind) {
    case GrammarSpec::Kind::none:
      break;
    case GrammarSpec::Kind::json_object:
      compiled = compile_any_json_object();
      break;
    case GrammarSpec::Kind::json_schema: {
      JsonSchemaOptions options;
      options.strict = spec.strict;
      compiled = compile_json_schema(spec.text, options, deadline);
      break;
    }
    case GrammarSpec::Kind::regex:
      compiled = compile_regex(spec.text, deadline);
      break;
    case GrammarSpec::Kind::choice:
      compiled = compile_choice(spec.choices, deadline);
      break;
    case GrammarSpec::Kind::gbnf:
      compiled = compile_gbnf(spec.text, deadline);
      break;
    case GrammarSpec::Kind::tool_calls:
      compiled = compile_tool_calls(spec.text, spec.tool_name, spec.tool_parser,
                                    spec.parallel_tool_calls, deadline);
      break;
  }
  if (compiled.ok()) return compiled;
  Error error = compiled.error();
  error.kind = ErrorKind::invalid_field;
  if (error.field.empty()) error.field = spec.field;
  return error;
}

}  // namespace tern::engine::grammar
