#pragma once

// Llama 3.x JSON calls (vLLM's "llama3_json"): the whole answer is the calls, optionally after
// `<|python_tag|>`, each `{"name": ..., "parameters": {...}}` ("arguments" also accepted), several
// separated by `;`. An answer that starts with anything else is plain content and streams at
// once. One that starts like a call is held: at finish() it is all calls, or, when any part
// fails, all content (as soon as the failure shows).
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/json_extent.h"
#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

class Llama3JsonToolParser final : public ToolCallParser {
 public:
  explicit Llama3JsonToolParser(std::vector<std::string> tool_names)
      : tool_names_(std::move(tool_names)) {}

  void feed(std::string_view text, ParsedOutput& out) override;
  void finish(ParsedOutput& out) override;

 private:
  enum class State {
    start,        // only whitespace so far, or part of `<|python_tag|>`
    content,      // not calls: everything streams as content
    before_call,  // expecting a call's `{`
    in_call,      // inside a call's JSON
    after_call,   // expecting `;` or the end
  };

  void advance(ParsedOutput& out);
  void give_up(ParsedOutput& out);

  std::vector<std::string> tool_names_;
  State state_ = State::start;
  std::string buffer_;  // all of the output while it may still be calls
  std::size_t scan_ = 0;
  std::size_t json_begin_ = 0;
  std::vector<ParsedToolCall> calls_;  // validated, reported at finish()
  JsonExtent json_;
};

}  // namespace tern::engine::chat
