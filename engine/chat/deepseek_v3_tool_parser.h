#pragma once

// DeepSeek V3 and V3.1 calls (vLLM's "deepseek_v3" and "deepseek_v31"), told apart per call:
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//   ```json
//   {...}
//   ```<｜tool▁call▁end｜><｜tool▁calls▁end｜>                                   V3
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>...   V3.1
// The section markers around the calls are dropped; text before them is content. A call that
// is not valid comes back, from its `<｜tool▁call▁begin｜>` to its end marker, as content.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/json_call_parser.h"
#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

class DeepseekV3ToolParser final : public JsonCallParser {
 public:
  explicit DeepseekV3ToolParser(std::vector<std::string> tool_names)
      : JsonCallParser(std::move(tool_names)) {}

 private:
  enum class State {
    content,  // outside calls (section markers are dropped here)
    prefix,   // after `<｜tool▁call▁begin｜>`, before `<｜tool▁sep｜>`
    header,   // after the separator, before the arguments' `{`
    body,     // in the arguments object
    trailer,  // after it: the closing fence, then `<｜tool▁call▁end｜>`
    broken,   // malformed: content up to `<｜tool▁call▁end｜>`
  };

  void advance(ParsedOutput& out) override;
  std::optional<ParsedToolCall> read_call() const override;
  bool after_json() const override { return state_ == State::trailer; }
  void to_content() override { state_ = State::content; }
  void break_call(std::size_t search_from);

  State state_ = State::content;
  std::size_t separator_begin_ = 0;
  std::size_t header_begin_ = 0;
};

}  // namespace tern::engine::chat
