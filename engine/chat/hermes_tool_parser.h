#pragma once

// Hermes-style calls, as Qwen2.5, Qwen3 and the Hermes models write them (vLLM's "hermes"):
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// any number of them, with text before, between and after. A call that is not a valid call of
// a known tool comes back whole, markers included, as content.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/json_extent.h"
#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

class HermesToolParser final : public ToolCallParser {
 public:
  explicit HermesToolParser(std::vector<std::string> tool_names)
      : tool_names_(std::move(tool_names)) {}

  void feed(std::string_view text, ParsedOutput& out) override;
  void finish(ParsedOutput& out) override;

 private:
  enum class State {
    content,  // outside calls
    body,     // after `<tool_call>`, in (or before) the call's JSON
    close,    // after the JSON, expecting `</tool_call>`
    broken,   // the call is malformed: its text up to `</tool_call>` is content
  };

  void advance(ParsedOutput& out);
  // Ends the call held in buffer_[0, end): a call when valid, else its text as content.
  void end_call(std::size_t end, ParsedOutput& out);
  void break_call(std::size_t search_from);

  std::vector<std::string> tool_names_;
  State state_ = State::content;
  // Text not yet given out: in content, at most a tail that may become `<tool_call>`; in a
  // call, everything from its `<tool_call>` on.
  std::string buffer_;
  std::size_t scan_ = 0;  // where processing of buffer_ resumes
  std::size_t json_begin_ = 0;
  std::size_t json_end_ = 0;
  bool json_started_ = false;
  bool skip_space_ = false;  // the whitespace after a call only separates it from what follows
  JsonExtent json_;
};

}  // namespace tern::engine::chat
