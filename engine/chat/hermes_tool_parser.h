#pragma once

// Hermes-style calls, as Qwen2.5, Qwen3 and the Hermes models write them (vLLM's "hermes"):
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// any number of them, with text before, between and after. A call that is not a valid call of
// a known tool comes back whole, markers included, as content.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/json_call_parser.h"
#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

class HermesToolParser final : public JsonCallParser {
 public:
  explicit HermesToolParser(std::vector<std::string> tool_names)
      : JsonCallParser(std::move(tool_names)) {}

 private:
  enum class State {
    content,  // outside calls
    body,     // after `<tool_call>`, in (or before) the call's JSON
    close,    // after the JSON, expecting `</tool_call>`
    broken,   // the call is malformed: its text up to `</tool_call>` is content
  };

  void advance(ParsedOutput& out) override;
  std::optional<ParsedToolCall> read_call() const override;
  bool after_json() const override { return state_ == State::close; }
  void to_content() override { state_ = State::content; }

  State state_ = State::content;
  bool json_started_ = false;
};

}  // namespace tern::engine::chat
