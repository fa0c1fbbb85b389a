#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/expected.h"
#include "engine/grammar/compile_deadline.h"
#include "engine/grammar/grammar.h"

namespace tern::engine::grammar {

// What a request asks its output to be, before it is compiled: the one form every API's field
// (response_format, structured_outputs, guided_*, llama.cpp's grammar and json_schema, the
// Responses API's text.format) is read into.
struct GrammarSpec {
  enum class Kind { none, json_object, json_schema, regex, choice, gbnf, tool_calls };
  Kind kind = Kind::none;
  std::string text;  // the schema's JSON, the regex, the GBNF grammar or the tools (tool_calls)
  std::vector<std::string> choices;
  bool strict = true;
  // tool_calls: the call format (a tool parser's name), the one tool allowed (empty: any), and
  // whether several calls may follow each other.
  std::string tool_parser;
  std::string tool_name;
  bool parallel_tool_calls = true;
  std::string field;  // the request field it came from, for errors

  bool active() const { return kind != Kind::none; }
  // Equal for specs that compile to the same grammar.
  std::string cache_key() const;
};

// Errors name the spec's field and, inside it, the keyword, pointer or position at fault. Past
// `deadline` every front end gives up with kCompileTimedOut.
Expected<std::shared_ptr<const Grammar>> compile_grammar(const GrammarSpec& spec,
                                                         CompileDeadline deadline = {});

}  // namespace tern::engine::grammar
