#include "engine/chat/think_reasoning_parser.h"

#include "engine/chat/marker_scanner.h"

namespace tern::engine::chat {
namespace {

constexpr std::string_view open_marker = "<think>";
constexpr std::string_view close_marker = "</think>";

}  // namespace

// vLLM passes the text between the markers through verbatim: "\nreasoning\n" and "\n\nanswer".
// Here both are trimmed, as Qwen3's template trims them when it renders the message back
// (`'<think>\n' + reasoning.strip('\n') + '\n</think>\n\n' + content.lstrip('\n')`), so
// clients see the text the model meant, and a message sent back renders the same prompt.

void ThinkReasoningParser::feed(std::string_view text, std::string& reasoning, std::string& rest) {
  if (state_ == State::answer && answer_begun_) {
    rest.append(text);
    return;
  }
  held_.append(text);
  advance(false, reasoning, rest);
}

void ThinkReasoningParser::finish(std::string& reasoning, std::string& rest) {
  advance(true, reasoning, rest);
  // Output that ends inside reasoning (no `</think>`, as when max_tokens cut it) is all
  // reasoning, as in vLLM; its trailing whitespace is dropped as at a close.
  held_.clear();
  trailing_space_.clear();
  state_ = State::start;
  reasoning_begun_ = false;
  answer_begun_ = false;
}

void ThinkReasoningParser::emit_reasoning(std::string_view text, std::string& reasoning) {
  std::size_t end = text.size();
  while (end > 0 && is_space(text[end - 1])) --end;
  if (end == 0) {
    trailing_space_.append(text);
    return;
  }
  reasoning.append(trailing_space_);
  reasoning.append(text.substr(0, end));
  trailing_space_.assign(text.substr(end));
}

void ThinkReasoningParser::advance(bool finishing, std::string& reasoning, std::string& rest) {
  for (;;) {
    const std::string_view held = held_;  // re-taken after every erase
    switch (state_) {
      case State::start: {
        const std::size_t begin = skip_space(held, 0);
        const std::string_view text = held.substr(begin);
        if (text.starts_with(open_marker)) {
          held_.erase(0, begin + open_marker.size());
          state_ = State::reasoning;
          break;
        }
        if (!finishing && (text.empty() || is_marker_prefix(text, open_marker))) return;
        state_ = starts_in_reasoning_ ? State::reasoning : State::answer;
        // No reasoning at all: the answer is the output as written.
        answer_begun_ = !starts_in_reasoning_;
        break;
      }
      case State::reasoning: {
        std::size_t begin = 0;
        if (!reasoning_begun_) {
          begin = skip_space(held, 0);
          reasoning_begun_ = begin < held.size();
        }
        const MarkerMatch match = find_marker(held, begin, {close_marker});
        const std::size_t end = finishing && !match.found() ? held.size() : match.position;
        emit_reasoning(held.substr(begin, end - begin), reasoning);
        if (!match.found()) {
          held_.erase(0, end);
          return;
        }
        trailing_space_.clear();
        held_.erase(0, end + close_marker.size());
        state_ = State::answer;
        break;
      }
      case State::answer: {
        std::size_t begin = 0;
        if (!answer_begun_) {
          begin = skip_space(held, 0);
          answer_begun_ = begin < held.size();
        }
        rest.append(held.substr(begin));
        held_.clear();
        return;
      }
    }
  }
}

}  // namespace tern::engine::chat
