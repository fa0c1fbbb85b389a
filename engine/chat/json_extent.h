#pragma once

// Where a JSON object or array ends, found while its text is still arriving. Tool calls are
// closed by a marker, but the marker may also occur inside one of the call's strings
// (`"text": "</tool_call>"`), so the end is found by the JSON's own structure: brackets counted
// outside strings, escapes followed. The scan resumes where it stopped, so feeding a long call
// byte by byte stays linear. It only finds the extent; whether the JSON is valid is checked
// once the whole value is known.
#include <cstddef>
#include <string>
#include <string_view>

namespace tern::engine::chat {

class JsonExtent {
 public:
  enum class Status {
    incomplete,  // needs more text
    complete,    // the value ended: `position` is just past its closing bracket
    invalid,     // `position` is at a byte that no JSON value could hold there
  };

  // After reset(), the value's opening `{` or `[` must be at text[position]; later calls go on
  // from where the last one stopped, in the same text grown at its end.
  Status scan(std::string_view text, std::size_t& position);
  void reset();

 private:
  // Deep enough for any real call's arguments; deeper nesting is not a call.
  static constexpr std::size_t max_depth_ = 512;

  std::string open_brackets_;  // the closing bracket each open container expects
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace tern::engine::chat
