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

#include "engine/chat/json_extent.h"
#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

class DeepseekV3ToolParser final : public ToolCallParser {
 public:
  explicit DeepseekV3ToolParser(std::vector<std::string> tool_names)
      : tool_names_(std::move(tool_names)) {}

  void feed(std::string_view text, ParsedOutput& out) override;
  void finish(ParsedOutput& out) override;

 private:
  enum class State {
    content,  // outside calls (section markers are dropped here)
    prefix,   // after `<｜tool▁call▁begin｜>`, before `<｜tool▁sep｜>`
    header,   // after the separator, before the arguments' `{`
    body,     // in the arguments object
    trailer,  // after it: the closing fence, then `<｜tool▁call▁end｜>`
    broken,   // malformed: content up to `<｜tool▁call▁end｜>`
  };

  void advance(ParsedOutput& out);
  void end_call(std::size_t end, ParsedOutput& out);
  void break_call(std::size_t search_from);

  std::vector<std::string> tool_names_;
  State state_ = State::content;
  std::string buffer_;  // in a call, from its `<｜tool▁call▁begin｜>` on
  std::size_t scan_ = 0;
  std::size_t separator_begin_ = 0;
  std::size_t header_begin_ = 0;
  std::size_t json_begin_ = 0;
  std::size_t json_end_ = 0;
  bool skip_space_ = false;
  JsonExtent json_;
};

}  // namespace tern::engine::chat
