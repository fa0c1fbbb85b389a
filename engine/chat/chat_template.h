#pragma once

// A model's chat template: Jinja source from tokenizer_config.json (or GGUF
// tokenizer.chat_template), compiled once and rendered per request with the messages, tools,
// add_generation_prompt, bos/eos tokens and any extra keyword arguments (enable_thinking, ...).
// Rendering matches transformers' apply_chat_template and @huggingface/jinja byte for byte on
// the templates models ship. Failures, raise_exception() included, come back as
// Error{"chat template: line L, column C: message"}.
#include <memory>
#include <string>
#include <string_view>

#include "engine/chat/interpreter.h"
#include "engine/chat/value.h"
#include "engine/expected.h"

namespace tern::engine::chat {

struct Program;

class ChatTemplate {
 public:
  static Expected<ChatTemplate> parse(std::string_view source, RenderLimits limits = {});

  // `context_json` is a JSON object; its keys become the template's variables.
  Expected<std::string> render_json(std::string_view context_json) const;
  // `context` must be a dict; built by the caller, e.g. with from_json().
  Expected<std::string> render(const Value& context) const;

  const std::string& source() const { return *source_; }

  // Whether the template's code reads the variable `name` (not an attribute or a keyword
  // argument of that name, nor text or a string literal). Lexes the source again: call it once,
  // at load. Used to tell templates that render `tools` from those that would drop them.
  bool reads_variable(std::string_view name) const;

 private:
  ChatTemplate() = default;

  std::shared_ptr<const std::string> source_;
  std::shared_ptr<const Program> program_;
  RenderLimits limits_;
};

// ChatML, for models that ship no template (the caller logs a warning when it falls back), with
// tools, tool calls and tool results written as Qwen's (Hermes-style) templates write them.
std::string chatml_fallback_template();

// The chat template in a tokenizer_config.json: `chat_template` is a string, or a list of
// {"name", "template"} from which `name` is taken.
Expected<std::string> chat_template_from_tokenizer_config(std::string_view config_json,
                                                          std::string_view name = "default");

}  // namespace tern::engine::chat
