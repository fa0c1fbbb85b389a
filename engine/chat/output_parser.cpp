#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

void OutputParser::feed(std::string_view text, ParsedOutput& out) {
  if (!reasoning_) {
    if (tools_) {
      tools_->feed(text, out);
    } else {
      out.content.append(text);
    }
    return;
  }
  reasoning_->feed(text, out.reasoning, rest_);
  forward_rest(out, false);
}

void OutputParser::finish(ParsedOutput& out) {
  if (reasoning_) reasoning_->finish(out.reasoning, rest_);
  forward_rest(out, true);
}

void OutputParser::forward_rest(ParsedOutput& out, bool finishing) {
  if (!tools_) {
    out.content.append(rest_);
  } else {
    if (!rest_.empty()) tools_->feed(rest_, out);
    if (finishing) tools_->finish(out);
  }
  rest_.clear();
}

}  // namespace tern::engine::chat
