#pragma once

// Mistral calls (vLLM's "mistral"), in both tokenizer generations:
//   [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]     before v11: one JSON array
//   [TOOL_CALLS]f[ARGS]{...}[TOOL_CALLS]g[ARGS]{...}          v11 and later: one marker per call
// (where a call id may sit between name and arguments: `f[CALL_ID]a1b2c3d4e[ARGS]{...}`).
// Text before the marker is content. A call (for the array form: the whole array) that is not
// valid comes back, marker included, as content.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/json_extent.h"
#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

class MistralToolParser final : public ToolCallParser {
 public:
  explicit MistralToolParser(std::vector<std::string> tool_names)
      : tool_names_(std::move(tool_names)) {}

  void feed(std::string_view text, ParsedOutput& out) override;
  void finish(ParsedOutput& out) override;

 private:
  enum class State {
    content,       // outside calls
    after_marker,  // after `[TOOL_CALLS]`: an array, an object or a name follows
    json_calls,    // in the array (or single object) of call objects
    name,          // in the v11 function name, before `[ARGS]` (or `[CALL_ID]`)
    call_id,       // in the call id, before `[ARGS]`
    before_arguments,
    arguments,  // in the v11 arguments object
  };

  void advance(ParsedOutput& out);
  // The call held in buffer_[0, end) failed: its text is content, and parsing goes on after it.
  void reject(std::size_t end, ParsedOutput& out);
  void accept(std::size_t end);
  void report_json_calls(std::size_t end, ParsedOutput& out);
  // After a name or call id: `[ARGS]` (or, after the name, `[CALL_ID]`) leads on; anything else
  // rejects the call. False while the text is too short to tell.
  bool read_name_end(std::string_view held, ParsedOutput& out);

  std::vector<std::string> tool_names_;
  State state_ = State::content;
  std::string buffer_;  // in a call, from its `[TOOL_CALLS]` on
  std::size_t scan_ = 0;
  std::size_t json_begin_ = 0;
  std::size_t name_begin_ = 0;
  std::size_t name_end_ = 0;
  std::size_t call_id_begin_ = 0;
  bool skip_space_ = false;
  JsonExtent json_;
};

}  // namespace tern::engine::chat
