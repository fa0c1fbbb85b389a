#pragma once

#include <string>
#include <string_view>

#include "engine/chat/chat_template.h"
#include "engine/chat/output_parser.h"
#include "engine/chat/value.h"
#include "engine/expected.h"

namespace tern::engine {

class Tokenizer;

// A model's chat template, ready to render prompts: the template file given by the operator, or
// the tokenizer's own (tokenizer_config.json / GGUF tokenizer.chat_template), or ChatML with a
// warning when the model ships none. It supplies bos_token and eos_token from the tokenizer.
class ModelChatTemplate {
 public:
  // `override_path` is a Jinja file that replaces the model's template; empty means none.
  static Expected<ModelChatTemplate> load(const Tokenizer& tokenizer,
                                          const std::string& override_path = {});

  // `context` is a dict with messages, tools, add_generation_prompt and any extra keyword
  // arguments (enable_thinking, ...). Errors carry the template's own message.
  Expected<std::string> render(const chat::Value& context) const;
  Expected<std::string> render_json(std::string_view context_json) const;

  bool is_fallback() const { return is_fallback_; }
  // False when the template never reads `tools`: a request's tools would silently vanish from
  // the prompt, so the service refuses them instead. The fallback renders them.
  bool renders_tools() const { return renders_tools_; }
  // The output parsers (vLLM's names) the template's own text implies; empty for none.
  const std::string& tool_call_parser() const { return tool_call_parser_; }
  const std::string& reasoning_parser() const { return reasoning_parser_; }

 private:
  ModelChatTemplate(chat::ChatTemplate compiled, std::string bos, std::string eos, bool fallback)
      : template_(std::move(compiled)),
        bos_token_(std::move(bos)),
        eos_token_(std::move(eos)),
        is_fallback_(fallback),
        renders_tools_(template_.reads_variable("tools")),
        tool_call_parser_(chat::tool_call_parser_for_template(template_.source())),
        reasoning_parser_(chat::reasoning_parser_for_template(template_.source())) {}

  chat::ChatTemplate template_;
  std::string bos_token_;
  std::string eos_token_;
  bool is_fallback_;
  bool renders_tools_;
  std::string tool_call_parser_;
  std::string reasoning_parser_;
};

}  // namespace tern::engine
