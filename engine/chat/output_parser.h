#pragma once

// The model's generated text, parsed back into the parts of an assistant message: content,
// reasoning and tool calls. Text arrives in pieces of any size (a token's text, a byte, the whole
// output at once) and the parts come out the same however it was split: a parser holds back
// any tail that may still become a marker (`<tool_c` before `all>`) until the next piece or
// finish() decides it. Parsers allocate only as the held text grows and never throw.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tern::engine::chat {

// One tool call, whole: its arguments are a JSON object's text, compact as the model wrote it
// after validation (always a complete, valid JSON object).
struct ParsedToolCall {
  std::string name;
  std::string arguments;
  // How many bytes of the same ParsedOutput's `content` came before this call in the text, so
  // a caller can keep text, call, text in their order (Anthropic's content blocks).
  std::size_t content_before = 0;
};

// What one feed() or finish() produced, in order of the text: content and reasoning are the
// new text of each part; tool calls are whole calls, completed during this piece. A call is
// reported only once its closing marker (or the end of output) shows it is well formed and
// names a known tool; until then its text is held. Malformed calls come back as content.
struct ParsedOutput {
  std::string content;
  std::string reasoning;
  std::vector<ParsedToolCall> tool_calls;

  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
  // Appends a call found after all of `content` so far (its content_before).
  void add_call(ParsedToolCall call) {
    call.content_before = content.size();
    tool_calls.push_back(std::move(call));
  }
  void clear() {
    content.clear();
    reasoning.clear();
    tool_calls.clear();
  }
};

// Splits `<think>…</think>` reasoning from the answer (vLLM's qwen3 and deepseek_r1).
class ReasoningParser {
 public:
  virtual ~ReasoningParser() = default;
  // Text in; reasoning and the rest (content, still to be tool-parsed) out, appended.
  virtual void feed(std::string_view text, std::string& reasoning, std::string& rest) = 0;
  virtual void finish(std::string& reasoning, std::string& rest) = 0;
  // True while the output is inside reasoning (for reasoning budgets).
  virtual bool in_reasoning() const = 0;
};

// Finds tool calls in the answer (after reasoning was split off).
class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  virtual void feed(std::string_view text, ParsedOutput& out) = 0;
  virtual void finish(ParsedOutput& out) = 0;
};

// vLLM's names: "qwen3", "deepseek_r1". `starts_in_reasoning` is true when the rendered prompt
// already ends in the opening marker (`<think>` plus whitespace), so the output holds only the
// close. nullptr for an unknown name.
std::unique_ptr<ReasoningParser> make_reasoning_parser(std::string_view name,
                                                       bool starts_in_reasoning);

// vLLM's names: "hermes", "llama3_json", "mistral", "deepseek_v3". `tool_names` are the
// request's functions: a call of any other name is not a call. nullptr for an unknown name.
std::unique_ptr<ToolCallParser> make_tool_call_parser(std::string_view name,
                                                      std::vector<std::string> tool_names);

// Whether `name` is one the factories above know, or "none" (no parser; config files say it).
bool known_tool_parser(std::string_view name);
bool known_reasoning_parser(std::string_view name);

// The markers a parser reads, so the engine can write them even when they are special tokens
// and the client asked for special tokens to be skipped. Empty for an unknown name.
std::vector<std::string_view> parser_markers(std::string_view name);

// The parser names a chat template implies: the tool-call format it renders (`<tool_call>`,
// `<|python_tag|>`, `[TOOL_CALLS]`, `<｜tool▁calls▁begin｜>`) and whether it writes `<think>`.
// Empty when the template shows none.
std::string tool_call_parser_for_template(std::string_view template_source);
std::string reasoning_parser_for_template(std::string_view template_source);

// Both together: reasoning first (when there is a reasoning parser), then tool calls in what
// follows it (when there is a tool parser); without either, text passes through as content.
class OutputParser {
 public:
  OutputParser(std::unique_ptr<ReasoningParser> reasoning, std::unique_ptr<ToolCallParser> tools)
      : reasoning_(std::move(reasoning)), tools_(std::move(tools)) {}

  void feed(std::string_view text, ParsedOutput& out);
  void finish(ParsedOutput& out);
  bool in_reasoning() const { return reasoning_ && reasoning_->in_reasoning(); }

 private:
  void forward_rest(ParsedOutput& out, bool finishing);

  std::unique_ptr<ReasoningParser> reasoning_;
  std::unique_ptr<ToolCallParser> tools_;
  std::string rest_;  // scratch: reasoning's output not yet given to the tool parser
};

}  // namespace tern::engine::chat
