#pragma once

// What the parsers whose calls carry one JSON object between an opening and a closing marker
// (hermes, deepseek_v3) share: the text held since the call's opening marker, where scanning
// resumes, the JSON's extent, and the steps after the opening: the JSON, the closing marker, a
// broken call given back as content, a call ended, and output that stops inside a call.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/json_extent.h"
#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

class JsonCallParser : public ToolCallParser {
 public:
  void feed(std::string_view text, ParsedOutput& out) final;
  void finish(ParsedOutput& out) final;

 protected:
  explicit JsonCallParser(std::vector<std::string> tool_names)
      : tool_names_(std::move(tool_names)) {}

  // Consumes what buffer_ allows, as far as it goes.
  virtual void advance(ParsedOutput& out) = 0;
  // The call held in buffer_ (its JSON at [json_begin_, json_end_)), when it is a valid call of
  // a known tool.
  virtual std::optional<ParsedToolCall> read_call() const = 0;
  // Whether the parser stands after a call's JSON, before its closing marker.
  virtual bool after_json() const = 0;
  // Back to the content state.
  virtual void to_content() = 0;

  enum class Step {
    wait,    // more text is needed
    done,    // the step is over; the parser moves on
    broken,  // the call is broken: its text is content, from scan_ on to the closing marker
  };
  // From a started JSON: its end (json_end_, and scan_ past it), or broken from its start.
  Step scan_json(std::string_view held);
  // After the JSON: whitespace (and backticks where `fenced`), then `close_marker`: the call
  // ended there; or broken from the JSON's end.
  Step expect_close(std::string_view held, std::string_view close_marker, bool fenced,
                    ParsedOutput& out);
  // A broken call: once `close_marker` has come, its text up to it is content and the parser is
  // back in content; false until then.
  bool release_broken(std::string_view close_marker, ParsedOutput& out);
  // Ends the call held in buffer_[0, end): a call when valid, else its text as content.
  void end_call(std::size_t end, ParsedOutput& out);
  void start_json(std::size_t at);

  std::vector<std::string> tool_names_;
  // Text not yet given out: in content, at most a tail that may become an opening marker; in a
  // call, everything from its opening marker on.
  std::string buffer_;
  std::size_t scan_ = 0;  // where processing of buffer_ resumes
  std::size_t json_begin_ = 0;
  std::size_t json_end_ = 0;
  bool skip_space_ = false;  // the whitespace after a call only separates it from what follows
  JsonExtent json_;
};

}  // namespace tern::engine::chat
