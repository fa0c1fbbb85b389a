#pragma once

// `<think>…</think>` reasoning, as Qwen3 and DeepSeek-R1 write it (vLLM's "qwen3" and
// "deepseek_r1"). Where the output starts in reasoning is the caller's to say: templates that end
// the prompt in `<think>` (DeepSeek-R1's since 2025-05, Qwen3's thinking models) leave only the
// close in the output. Otherwise a leading `<think>` (after whitespace) opens reasoning, and an
// output that starts with anything else is all content.
#include <cstddef>
#include <string>
#include <string_view>

#include "engine/chat/output_parser.h"

namespace tern::engine::chat {

class ThinkReasoningParser final : public ReasoningParser {
 public:
  explicit ThinkReasoningParser(bool starts_in_reasoning)
      : starts_in_reasoning_(starts_in_reasoning) {}

  void feed(std::string_view text, std::string& reasoning, std::string& rest) override;
  void finish(std::string& reasoning, std::string& rest) override;
  bool in_reasoning() const override {
    return state_ == State::reasoning || (state_ == State::start && starts_in_reasoning_);
  }

 private:
  enum class State {
    start,      // leading whitespace, or part of `<think>`
    reasoning,  // before `</think>`
    answer,     // after it (or no reasoning at all): everything is the rest
  };

  void advance(bool finishing, std::string& reasoning, std::string& rest);
  void emit_reasoning(std::string_view text, std::string& reasoning);

  bool starts_in_reasoning_;
  State state_ = State::start;
  std::string held_;
  // Reasoning is trimmed: its leading whitespace dropped, its trailing whitespace held here
  // until more reasoning shows it was inside, or `</think>` shows it was the end.
  std::string trailing_space_;
  bool reasoning_begun_ = false;
  bool answer_begun_ = false;  // whitespace between `</think>` and the answer is dropped
};

}  // namespace tern::engine::chat
